// page.test.mjs — the page of 'vramfit serve' in Debian's chromium, driven by
// playwright-core: what it shows equals what the CLI answers with --json for
// the same inputs; a shared link reproduces the view; the chart has one point
// per swept value; keyboard, labels, phone width, dark scheme; no console
// errors; nothing fetched from anywhere but the server.
// Usage: node page.test.mjs PORT VRAMFIT SHOTS_DIR — prints "ok NAME" or
// "FAIL NAME: why" per case (tests/cli/test_page.sh runs it).
import { chromium } from 'playwright-core';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const [port, VF, SHOTS, HUBSERVE, HUBAPI] = process.argv.slice(2);
const BASE = `http://127.0.0.1:${port}`;
mkdirSync(SHOTS, { recursive: true });
let failed = 0;
const ok = name => console.log(`ok ${name}`);
const fail = (name, why) => { failed++; console.log(`FAIL ${name}: ${String(why).replace(/\s+/g, ' ').slice(0, 400)}`); };
function check(name, cond, why) { if (cond) ok(name); else fail(name, why); }

// The CLI's --json for the same inputs: each parameter as --name=value, flags as --name.
function cli(cmd, params, extra = [], env = process.env) {
  const args = [cmd, '--json'];
  for (const [k, v] of Object.entries(params)) if (k !== 'model') args.push(v === true ? `--${k}` : `--${k}=${v}`);
  args.push(...extra, '--', params.model);
  try { return JSON.parse(execFileSync(VF, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env })); }
  catch (e) {
    if (e.status === 1 && e.stdout) return JSON.parse(e.stdout); // fit: does not fit, still an answer
    return { error: String(e.stderr).split('\n')[0].replace(/^vramfit: /, ''), exit: e.status };
  }
}
const query = p => new URLSearchParams(Object.entries(p).map(([k, v]) => [k, v === true ? '1' : String(v)])).toString();

const dataDir = mkdtempSync(join(tmpdir(), 'vramfit-chromium-'));
const ctx = await chromium.launchPersistentContext(dataDir, {
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
    '--disable-sync', '--no-first-run'],
  viewport: { width: 1100, height: 900 },
});
await ctx.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: BASE });
const problems = [], foreign = [];
function watch(page) {
  page.on('console', m => { if (m.type() === 'error') problems.push(m.text()); });
  page.on('pageerror', e => problems.push(String(e)));
  page.on('request', r => { if (!r.url().startsWith(BASE + '/')) foreign.push(r.url()); });
}
// Opens a URL and waits until the page has shown every answer (body[data-ready]).
async function view(page, path) {
  const t0 = Date.now();
  await page.goto(BASE + path);
  await page.waitForSelector('body[data-ready]', { timeout: 60000 });
  return Date.now() - t0;
}
async function waitUpdate(page, before) {
  await page.waitForFunction(b => document.body.dataset.ready && document.body.dataset.ready !== b, before, { timeout: 60000 });
}
const ready = page => page.evaluate(() => document.body.dataset.ready || '');
const bytesOf = (page, sel) => page.$$eval(sel, els => els.map(e => Number(e.dataset.bytes)));

async function breakdown(page) {
  return page.$$eval('#breakdown tr[data-component]', rows => Object.fromEntries(rows.map(r =>
    [r.dataset.component, [...r.querySelectorAll('td[data-bytes]')].map(td => Number(td.dataset.bytes))])));
}
// The page's figures against estimate --json: each component per GPU and over all GPUs, the totals.
function sameEstimate(name, shown, e) {
  const want = { per_gpu: [e.per_gpu_bytes, e.total_bytes] };
  for (const k of ['weights', 'kv_cache', 'activations', 'overhead']) want[k] = [e.components[k], e.components[k] * e.gpus];
  for (const k of ['gradients', 'optimizer']) if (e.components[k]) want[k] = [e.components[k], e.components[k] * e.gpus];
  if (e.device_bytes !== undefined) want.device = [e.device_bytes];
  if (e.host_bytes) want.host = [e.host_bytes];
  const bad = Object.keys(want).filter(k => JSON.stringify(shown[k]) !== JSON.stringify(want[k]));
  check(name, bad.length === 0 && Object.keys(shown).length === Object.keys(want).length,
    bad.map(k => `${k}: page ${JSON.stringify(shown[k])}, CLI ${JSON.stringify(want[k])}`).join('; ') || `rows ${Object.keys(shown)}`);
}

const page = await ctx.newPage();
watch(page);

// 1. The link: loading it fills the form and shows the result without a click.
const P1 = { model: 'meta-llama/Llama-3.1-70B', runtime: 'vllm', gpu: 'H100x2', context: 8192 };
const ms = await view(page, '/?' + query(P1));
const paint = await page.evaluate(() => { const p = performance.getEntriesByName('first-contentful-paint')[0]; return p ? Math.round(p.startTime) : -1; });
console.log(`# first contentful paint ${paint} ms; the full view (5 answers) ${ms} ms`);
const form = await page.evaluate(() => ({ model: document.getElementById('k-model').value, runtime: document.getElementById('k-runtime').value,
  gpu: document.getElementById('k-gpu').value, context: document.getElementById('k-context').value }));
check('a link fills the form', JSON.stringify(form) === JSON.stringify({ ...P1, context: '8192' }), JSON.stringify(form));
const e1 = cli('estimate', P1);
sameEstimate('breakdown = estimate --json (70B, vLLM, 2 x H100, 8192)', await breakdown(page), e1);
check('split over the two GPUs (GxN = tensor parallel 2)', e1.gpus === 2 && /tp 2/.test(JSON.stringify(e1.assumptions)), JSON.stringify(e1.assumptions));
const warn = await page.$eval('#warnings', el => el.textContent).catch(() => '');
check('the engine not starting is said in words', e1.starts !== false || warn.includes('vLLM would not start: ' + e1.reason), `starts ${e1.starts}, warnings '${warn}'`);
const assum = await page.$$eval('#assumptions li', l => l.map(x => x.textContent));
check('assumptions as sentences, no raw keys', assum.length >= 4 && assum.every(s => /^[A-Z]/.test(s) && /[.)]$/.test(s) && !/note_\d/.test(s)), assum.join(' | '));
const f1 = cli('fit', P1);
const verdict = await page.$eval('#verdict', el => el.textContent);
check('the verdict is fit --json\'s', verdict.startsWith(f1.fits ? 'Fits' : 'Does not fit') && verdict.includes(f1.gpu), verdict);
const limits = await page.$eval('#limits', el => el.textContent);
check('longest context and fewest GPUs as fit says', limits.includes(f1.max_context ? Number(f1.max_context).toLocaleString('en') + ' tokens' : 'none')
  && (!f1.min_gpus || limits.includes(`${f1.min_gpus} (${f1.parallelism})`)), limits);

// 2. The chart: one point per swept value, each at the CLI's figure.
const s1 = cli('sweep', { ...P1, over: 'context' });
const pts = await page.$$eval('#chart-svg circle.pt', cs => cs.map(c => [Number(c.dataset.value), Number(c.dataset.bytes)]));
const want1 = s1.points.filter(p => p.needed_bytes > 0).map(p => [p.value, p.needed_bytes]);
check('chart: one point per swept value = sweep --json', want1.length >= 8 && JSON.stringify(pts) === JSON.stringify(want1), `page ${pts.length}, CLI ${want1.length}`);
check('chart: the device line is drawn', await page.$('#device-line') !== null, 'no #device-line');
check('chart: the longest context that fits is marked', !f1.max_context || await page.$('#best-line') !== null, 'no #best-line');

// 3. Which GPUs fit and how many = fit --json without --gpu.
const g1 = cli('fit', { model: P1.model, runtime: 'vllm', context: 8192 });
const rows = await page.$$eval('#gpu-table tr[data-gpu]', rs => rs.map(r => [r.dataset.gpu, Number(r.dataset.count)]));
check('GPU table = fit --json without --gpu (names, counts, order)', rows.length > 3 && JSON.stringify(rows) === JSON.stringify(g1.gpus.map(g => [g.gpu, g.count])),
  `page ${rows.length} rows, CLI ${g1.gpus.length}`);
const need = await bytesOf(page, '#gpu-table tr[data-gpu] td:nth-child(4)');
check('GPU table: needed per GPU = the CLI\'s', JSON.stringify(need) === JSON.stringify(g1.gpus.map(g => g.needed_bytes)), 'differs');

// 4. The launch command, and its copy button (keyboard: focus + Enter).
const pl = cli('plan', { ...P1, emit: 'vllm' });
const cfg = await page.$eval('#plan-config', el => el.textContent).catch(() => null);
check('launch command = plan --emit vllm --json', pl.config && cfg === pl.config, `page '${cfg}', CLI '${pl.config || pl.error}'`);
await page.focus('#copy');
await page.keyboard.press('Enter');
await page.waitForFunction(() => document.getElementById('copy').textContent !== 'Copy', null, { timeout: 5000 }).catch(() => {});
const clip = await page.evaluate(() => navigator.clipboard.readText()).catch(e => 'error: ' + e);
check('copy button puts the command on the clipboard', clip === pl.config, clip);
await page.screenshot({ path: join(SHOTS, 'page-70b-vllm-2xh100.png'), fullPage: true });
await page.locator('#chart').screenshot({ path: join(SHOTS, 'page-chart.png') });

// 5. Changing an input by keyboard updates the URL; that URL reproduces the view.
let before = await ready(page);
await page.focus('#k-context');
await page.keyboard.press('Control+A');
await page.keyboard.type('4096');
await waitUpdate(page, before);
const url2 = page.url();
check('typing a value updates the URL', new URL(url2).searchParams.get('context') === '4096', url2);
sameEstimate('breakdown after the change = estimate --json', await breakdown(page), cli('estimate', { ...P1, context: 4096 }));
const shown2 = await page.$eval('#out', el => el.innerText.replace(/Done in \d+ ms\./, ''));
const page2 = await ctx.newPage();
watch(page2);
await view(page2, new URL(url2).pathname + new URL(url2).search);
const shown3 = await page2.$eval('#out', el => el.innerText.replace(/Done in \d+ ms\./, ''));
check('a shared link reproduces the view', shown2 === shown3 && shown2.length > 500, `${shown2.length} vs ${shown3.length} characters`);
await page2.close();

// 6. Against batch: switchable, a point per value, kept in the URL.
before = await ready(page);
await page.click('#over-batch');
await waitUpdate(page, before);
const sb = cli('sweep', { ...P1, context: 4096, over: 'batch' });
const bpts = await page.$$eval('#chart-svg circle.pt', cs => cs.map(c => Number(c.dataset.value)));
check('chart against batch: a point per value = sweep --over batch', JSON.stringify(bpts) === JSON.stringify(sb.points.filter(p => p.needed_bytes > 0).map(p => p.value)), JSON.stringify(bpts));
check('the axis is in the URL', new URL(page.url()).searchParams.get('over') === 'batch', page.url());

// 7. Runtime generic is sent as generic.
const sent = [];
page.on('request', r => { if (r.url().includes('/api/estimate')) sent.push(new URL(r.url()).searchParams.get('runtime')); });
before = await ready(page);
await page.selectOption('#k-runtime', 'generic');
await waitUpdate(page, before);
const P7 = { model: P1.model, runtime: 'generic', gpu: 'H100x2', context: 4096 };
check('runtime generic is sent as generic', sent.includes('generic'), JSON.stringify(sent));
sameEstimate('generic breakdown = estimate --runtime generic --json', await breakdown(page), cli('estimate', P7));
check('the vLLM knobs are hidden for generic', await page.$eval('#g-vllm', el => el.hidden), 'vLLM group shown');

// 8. Training: its knobs appear; the figures are estimate --train's.
await page.goto(BASE + '/?' + query({ model: 'Qwen/Qwen3-8B', gpu: 'H100x4', train: true, zero: 3, 'lora-rank': 16 }));
await page.waitForSelector('body[data-ready]', { timeout: 60000 });
check('training knobs shown, vLLM and llama.cpp hidden', await page.evaluate(() => !document.getElementById('g-train').hidden
  && document.getElementById('g-vllm').hidden && document.getElementById('g-llamacpp').hidden), 'groups');
const e8 = cli('estimate', { model: 'Qwen/Qwen3-8B', gpu: 'H100x4', train: true, zero: 3, 'lora-rank': 16 });
sameEstimate('training breakdown = estimate --train --zero 3 --lora-rank 16 --json', await breakdown(page), e8);
const pl8 = cli('plan', { model: 'Qwen/Qwen3-8B', gpu: 'H100x4', zero: 3, 'lora-rank': 16, emit: 'deepspeed' });
const cfg8 = await page.$eval('#plan-config', el => el.textContent).catch(() => null);
check('training launch = plan --emit deepspeed', pl8.config && cfg8 === pl8.config, `page '${String(cfg8).slice(0, 80)}', CLI '${String(pl8.config || pl8.error).slice(0, 80)}'`);
await page.screenshot({ path: join(SHOTS, 'page-training.png'), fullPage: true });

// 9. llama.cpp knobs: shown for llama.cpp, and passed on.
const P9 = { model: 'meta-llama/Llama-3.1-8B', runtime: 'llamacpp', gpu: 'RTX4090', context: 16384, ubatch: 256, 'flash-attn': 'on', 'kv-unified': true };
await view(page, '/?' + query(P9));
check('llama.cpp knobs shown', await page.$eval('#g-llamacpp', el => !el.hidden), 'hidden');
check('a flag from the link ticks its box', await page.$eval('#k-kv-unified', el => el.checked), 'not ticked');
sameEstimate('llama.cpp breakdown = estimate --json with its knobs', await breakdown(page), cli('estimate', P9));

// 9b. The knobs the page once showed as bare boxes under "Other knobs": each has a label and a
// group of its own (from the commands' --help), and goes only to the commands that take it.
const LABELLED = ['alloc-conf', 'cuda-context', 'cuda-version', 'draft', 'draft-tokens', 'mmproj', 'max-images', 'image-size',
  'enable-lora', 'max-loras', 'max-lora-rank', 'input', 'grads-kept', 'torch-version', 'nodes', 'approximate', 'margin'];
const bare = await page.evaluate(names => names.filter(n => { const l = document.querySelector(`label[data-knob="${n}"]`);
  return !l || l.closest('fieldset').id === 'g-other' || /^--/.test(l.textContent.trim()); }), LABELLED);
check('every knob has a label and a group of its own (none left under "Other knobs")', bare.length === 0, bare.join(' '));
const P9b = { model: 'Qwen/Qwen3-8B', gpu: 'RTX4090', 'alloc-conf': 'expandable_segments:True', nodes: 1, margin: '3GiB' };
await view(page, '/?' + query(P9b));
check('a PyTorch knob from the link fills its box', await page.$eval('#k-alloc-conf', el => el.value) === 'expandable_segments:True', 'empty');
const { nodes: _n, margin: _m, ...P9e } = P9b;
sameEstimate('--alloc-conf passed on; fit\'s --nodes and --margin not sent to estimate (estimate --json)', await breakdown(page), cli('estimate', P9e));
const f9 = cli('fit', P9b), v9 = await page.$eval('#verdict', el => el.textContent).catch(() => '');
const need9 = (f9.needed_bytes / 1073741824).toFixed(2) + ' GiB'; // the page's gib(): GiB with 2 decimals
check('fit\'s --margin sent to fit (the verdict is fit --margin 3GiB\'s)', v9.startsWith(f9.fits ? 'Fits' : 'Does not fit') && v9.includes('needs ' + need9), `page '${v9}', CLI needs ${need9}`);

// 10. Errors in words: the CLI's one line for a bad knob; the server's for a name it will not open.
const mark = problems.length;
await view(page, '/?model=Qwen/Qwen3-8B&context=lots');
const err = await page.$eval('#estimate p.err', el => el.textContent).catch(() => '');
const cerr = cli('estimate', { model: 'Qwen/Qwen3-8B', context: 'lots' });
check('a bad knob shows the CLI\'s error line', cerr.error && err === cerr.error, `page '${err}', CLI '${cerr.error}'`);
await view(page, '/?model=qwen3-8c');
const err2 = await page.$eval('#estimate p.err', el => el.textContent).catch(() => '');
check('a name the catalog lacks: refused with its near names', /^qwen3-8c: not a catalog model.*did you mean: .*Qwen3-8B/.test(err2), err2);
await view(page, '/?model=someorg/some-model');
const err3 = await page.$eval('#estimate p.err', el => el.textContent).catch(() => '');
check('a Hub id on a server without --hub: refused, naming --hub', /^someorg\/some-model: not a catalog model.*start it with --hub/.test(err3), err3);
// the browser logs each refused request (HTTP 4xx) as a console error: those are these cases' own
problems.splice(mark, problems.length - mark, ...problems.slice(mark).filter(p => !/status of 40[04]/.test(p)));

// 11. Every control has a label; Tab reaches the model first; keyboard-only submit.
await view(page, '/?model=Qwen/Qwen3-8B&gpu=RTX4090');
const unlabelled = await page.$$eval('#f input, #f select', cs => cs.filter(c => !c.labels || !c.labels.length || !c.labels[0].textContent.trim()).map(c => c.id));
check('every control has a label', unlabelled.length === 0, unlabelled.join(' '));
await page.evaluate(() => document.activeElement && document.activeElement.blur());
await page.keyboard.press('Tab');
check('Tab reaches the model first', await page.evaluate(() => document.activeElement.id) === 'k-model', await page.evaluate(() => document.activeElement.id));
const params = await (await fetch(BASE + '/api/params')).json();
const noControl = [];
for (const n of [...new Set([...params.estimate, ...params.fit].map(p => p.name))]) {
  if (['micro-batch', 'seq-len', 'units', 'explain', 'emit', 'over', 'values'].includes(n)) continue;
  if (!(await page.$(`[id="k-${n}"]`))) noControl.push(n);
}
check('every knob of estimate and fit has a control', noControl.length === 0, noControl.join(' '));

// 12. A phone's width, and the dark scheme.
await page.setViewportSize({ width: 390, height: 844 });
await view(page, '/?' + query(P1));
const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
check('no sideways scrolling at 390 px', overflow <= 0, `${overflow} px too wide`);
await page.screenshot({ path: join(SHOTS, 'page-phone.png'), fullPage: true });
await page.setViewportSize({ width: 1100, height: 900 });
await page.emulateMedia({ colorScheme: 'dark' });
await view(page, '/?' + query(P1));
const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
const rgb = bg.match(/\d+/g).map(Number);
check('prefers-color-scheme: dark is honoured', rgb[0] + rgb[1] + rgb[2] < 150, bg);
await page.screenshot({ path: join(SHOTS, 'page-dark.png'), fullPage: true });

// 13. Offline and clean.
check('nothing fetched from elsewhere (no CDN, no web fonts)', foreign.length === 0, foreign.join(' '));
check('no console errors', problems.length === 0, problems.join(' | '));

// 14. A Hub id on a server started with --hub (the stand-in Hub): the label says so, the figures
// are the CLI's for hf://ID, and the Hub is asked once: the page's first estimate fills vramfit's
// cache, the four other answers read it (five commands at once would each fetch the headers).
if (HUBSERVE) {
  const HB = `http://127.0.0.1:${HUBSERVE}`, stats = async () => (await fetch(`http://127.0.0.1:${HUBAPI}/_stats`)).json();
  const hp = await ctx.newPage();
  watch(hp);
  const r0 = (await stats()).requests;
  await hp.goto(HB + '/?model=fp8org/mixed&context=1024');
  await hp.waitForSelector('body[data-ready]', { timeout: 60000 });
  const asked = (await stats()).requests - r0;
  const label = await hp.$eval('label[data-knob="model"]', el => el.textContent);
  check('--hub: the model box says it takes a Hub id', /Hub id/.test(label), label);
  const fresh = mkdtempSync(join(tmpdir(), 'vramfit-hubcache-'));
  const eh = cli('estimate', { model: 'hf://fp8org/mixed', context: 1024 }, [], { ...process.env, HF_HUB_OFFLINE: '', XDG_CACHE_HOME: fresh });
  const once = (await stats()).requests - r0 - asked;
  sameEstimate('--hub: a Hub id\'s breakdown = estimate hf://ID --json', await breakdown(hp), eh);
  check('--hub: the page asked the Hub as often as one command does', asked > 0 && asked === once, `page ${asked} requests, one CLI run ${once}`);
  rmSync(fresh, { recursive: true, force: true });
  await hp.close();
}

await ctx.close();
rmSync(dataDir, { recursive: true, force: true });
process.exit(failed ? 1 : 0);
