// Says once which real database the suite talks to (docs/contract.md, test databases): DATABASE_URL when set, else embedded PGlite only.
export default function setup(): void {
  const url = process.env.DATABASE_URL;
  const where = url ? `Postgres at ${new URL(url).host} (DATABASE_URL) and PGlite` : 'PGlite only (set DATABASE_URL to add a real Postgres)';
  console.log(`[tollgate tests] database backends: ${where}`);
}
