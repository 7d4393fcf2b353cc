// bench/page.mjs — how soon the page of 'vramfit serve' paints and shows its answer, in Debian's
// chromium (headless, 1280 x 800): first-contentful-paint and the page's own "vf-answer" mark
// (the verdict and the per-GPU figure drawn), both from performance entries, over N fresh loads
// of one link. Usage: node bench/page.mjs PORT [N] (bench/page.sh starts the server).
import { readFileSync } from 'node:fs';
const { chromium } = await import(new URL('../tests/page/node_modules/playwright-core/index.mjs', import.meta.url));
const [port, n = '10'] = process.argv.slice(2);
const LINK = '/?model=meta-llama/Llama-3.1-70B&runtime=vllm&gpu=H100x2&context=8192';
const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const b = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
const ctx = await b.newContext({ viewport: { width: 1280, height: 800 } });
const fcp = [], ans = [], started = [], askedAt = [], before = load();
for (let i = 0; i <= Number(n); i++) {
  const p = await ctx.newPage();
  await p.goto(`http://127.0.0.1:${port}${LINK}`);
  await p.waitForFunction(() => performance.getEntriesByName('vf-answer').length > 0, null, { timeout: 60000 });
  const [f, a, st, as] = await p.evaluate(() => [performance.getEntriesByName('first-contentful-paint')[0].startTime, ...['vf-answer', 'vf-start', 'vf-asked'].map(m => performance.getEntriesByName(m)[0].startTime)]);
  if (i > 0) { fcp.push(f); ans.push(a); started.push(st); askedAt.push(as); } // the first load warms the browser and the page cache
  await p.waitForSelector('body[data-ready]', { timeout: 60000 });
  await p.waitForLoadState('networkidle'); // the catalog's and the GPUs' lists, asked after the answer: not into the next load
  await p.close();
}
// Baselines in the same run, on the same loaded machine: the first paint of a page with nothing
// to run (the server's /api/params as a text document), and the two answers the page waits for
// (estimate and fit of the link) asked straight from node, at once, as the page asks them.
const fcp0 = [], ans0 = [], Q = LINK.slice(2);
for (let i = 0; i <= Number(n); i++) {
  const p = await ctx.newPage();
  await p.goto(`http://127.0.0.1:${port}/api/params`);
  await p.waitForFunction(() => performance.getEntriesByName('first-contentful-paint').length > 0, null, { timeout: 60000 });
  if (i > 0) fcp0.push(await p.evaluate(() => performance.getEntriesByName('first-contentful-paint')[0].startTime));
  await p.close();
  const t0 = performance.now();
  await Promise.all(['estimate', 'fit'].map(c => fetch(`http://127.0.0.1:${port}/api/${c}?${Q}`).then(r => r.text())));
  if (i > 0) ans0.push(performance.now() - t0);
}
await b.close();
const med = xs => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
const stat = xs => { const s = [...xs].sort((x, y) => x - y); return `median ${Math.round(s[Math.floor(s.length / 2)])} ms, min ${Math.round(s[0])} ms, max ${Math.round(s[s.length - 1])} ms`; };
console.log(`${LINK} at 1280 x 800, ${fcp.length} loads (after one to warm up)`);
console.log(`  first contentful paint: ${stat(fcp)}`);
console.log(`  the answer (verdict + per-GPU figure drawn): ${stat(ans)}`);
console.log(`  on the way: the script starts ${stat(started)}; estimate and fit asked ${stat(askedAt)}`);
console.log(`  baselines: first paint of a page with no script ${stat(fcp0)}; estimate + fit asked at once ${stat(ans0)}`);
console.log(`  ratios (medians): first paint ${(med(fcp) / med(fcp0)).toFixed(2)} x the no-script page's; the answer ${(med(ans) / med(ans0)).toFixed(2)} x the two commands' own time`);
console.log(`  load average before ${before}, after ${load()} (CPUs: ${(await import('node:os')).cpus().length})`);
