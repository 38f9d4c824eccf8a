// Epoch milliseconds as a timestamptz, exactly, in SQL. `n * interval '1 millisecond'` multiplies in float8, which
// stops being exact past 2^53 µs from 1970 (the year 2255): 9999-12-31T23:59:59.999 came back as .999008. Whole
// hours go in as an integer here, and the rest (under an hour) as seconds, which float8 holds to far below a µs.

/** `ms` is an SQL expression of type bigint (whole milliseconds since 1970, UTC). */
export const msTimestamp = (ms: string): string =>
  `(timestamptz 'epoch' + make_interval(hours => (${ms} / 3600000)::int, secs => (${ms} % 3600000) / 1000.0))`;
