/** A server's Prometheus page, read as the tests compare it. */

/** `name{labels}` -> value of every sample on the `/metrics` page of the server at `url`. */
export async function scrape(url: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return new Map(text.split('\n').filter((l) => l && !l.startsWith('#')).map((l) => [l.slice(0, l.lastIndexOf(' ')), Number(l.slice(l.lastIndexOf(' ') + 1))]));
}
