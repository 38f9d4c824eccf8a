// Tests read many loosely shaped JSON bodies; one typed door keeps the casts in one place.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

export async function readJson(res: Response): Promise<Json> {
  return (await res.json()) as Json;
}
