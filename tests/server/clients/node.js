'use strict';
// Node clients against the server on 127.0.0.1:PORT:
//   node node.js PORT memjs              memjs (memcached's binary protocol)
//   node node.js PORT memcached          the `memcached` package (text)
//   node node.js PORT sasl PASSWORD      memjs with SASL PLAIN
// Run by test_client_node.sh with NODE_PATH set to the build tree's
// node_modules; exits 1 at the first failed check.
const crypto = require('crypto');
const util = require('util');

const [port, mode, password] = process.argv.slice(2);
const server = `127.0.0.1:${port}`;
const SIZES = [1, 100, 1000, 10000, 100000, 1000000];
const quiet = { log() {} };

// RHKV_CLIENT_KEEP_GOING=1: report every failed check, fail at the end.
let failures = 0;
function check(cond, what) {
  if (!cond) {
    console.error(`FAIL: ${what}`);
    if (process.env.RHKV_CLIENT_KEEP_GOING !== '1') process.exit(1);
    failures += 1;
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
// Polls GONE (async, true once the key is gone) every 100 ms for up to 60 s.
async function untilGone(gone) {
  for (const end = Date.now() + 60000; Date.now() < end; await sleep(100)) {
    if (await gone()) return true;
  }
  return false;
}
// 5,000 keys of 23 bytes.
const MANY = Array.from({ length: 5000 },
  (_, i) => `multiget:${String(i).padStart(5, '0')}:abcdefgh`);

async function memjsChecks() {
  const memjs = require('memjs');
  const c = memjs.Client.create(server, { timeout: 10, conntimeout: 10, retries: 0, logger: quiet });
  const str = async (k) => {
    const r = await c.get(k);
    return r.value === null ? null : r.value.toString('latin1');
  };
  await c.flush();
  check(await c.set('k', 'v', {}) === true, 'set');
  check(await str('k') === 'v', 'get after set');
  check(await str('nx') === null, 'get of a missing key');
  check(await c.add('k', 'x', {}) === false, 'add of an existing key');
  check(await str('k') === 'v', 'add changed an existing key');
  check(await c.add('k2', '2', {}) === true, 'add');
  check(await c.replace('nx', 'x', {}) === false, 'replace of a missing key');
  // memjs 1.3.2's prepend sends append's opcode (0x0e): append only.
  check(await c.append('k2', '3') === true, 'append');
  check(await str('k2') === '23', 'append result');

  check(await c.set('n', '10', {}), 'set n');
  let r = await c.increment('n', 5, {});
  check(r.success && r.value === 15, `increment: ${JSON.stringify(r)}`);
  r = await c.decrement('n', 100, {});
  check(r.success && r.value === 0, `decrement below 0: ${JSON.stringify(r)}`);
  r = await c.increment('nx-counter', 1, { initial: 7 });
  check(r.success && r.value === 7, `increment with an initial value: ${JSON.stringify(r)}`);
  check(await str('nx-counter') === '7', 'value created by increment');

  check(await c.delete('k') === true && await str('k') === null, 'delete');
  check(await c.delete('k') === false, 'delete of a missing key');

  // A relative TTL of N seconds may end after N - 1 (at a second
  // boundary): 3 leaves the touch 2 seconds. 'u', set after 't' with the
  // same TTL and not touched, tells when 't' would have expired.
  check(await c.set('t', 't', { expires: 3 }), 'set with a TTL');
  check(await c.set('u', 'u', { expires: 3 }), 'set with a TTL');
  check(await c.touch('t', 100) === true, 'touch');
  check(await c.touch('nx', 100) === false, 'touch of a missing key');
  check(await untilGone(async () => await str('u') === null), 'a TTL of 3 s never expired');
  check(await str('t') === 't', 'touch did not extend the TTL');

  for (const size of SIZES) {
    const v = crypto.randomBytes(size);
    check(await c.set(`size:${size}`, v, {}), `set of ${size} bytes`);
    const got = (await c.get(`size:${size}`)).value;
    check(got !== null && v.equals(got), `get of ${size} bytes`);
  }

  // Any bytes in a binary-protocol key: spaces, CR, LF, NUL, control bytes.
  const ctl = 'ctl \x01\x02\x07\x1b\x7f\r\n\x00:key';
  check(await c.set(ctl, 'control', {}), 'set of a key with control bytes');
  check(await str(ctl) === 'control', 'get of a key with control bytes');
  check(await c.delete(ctl) === true && await str(ctl) === null,
    'delete of a key with control bytes');

  // 5,000 gets pipelined on one connection.
  const sets = await Promise.all(MANY.map((k, i) => c.set(k, `v${i}`, {})));
  check(sets.every((ok) => ok === true), 'pipelined sets of 5,000 keys');
  const gets = await Promise.all(MANY.concat(['nx1', 'nx2']).map((k) => c.get(k)));
  const right = MANY.filter((k, i) => gets[i].value !== null && gets[i].value.toString() === `v${i}`);
  check(right.length === 5000 && gets[5000].value === null && gets[5001].value === null,
    `pipelined gets of 5,000 keys: ${right.length} right`);

  const stats = (key) => new Promise((resolve, reject) => {
    c.statsWithKey(key, (err, srv, st) => (err ? reject(err) : resolve(st)));
  });
  const st = await stats('');
  check(Number(st.curr_items) >= 5000, `stats curr_items: ${st.curr_items}`);
  const items = await stats('items');
  check(Object.keys(items).some((k) => /^items:\d+:number$/.test(k)), 'stats items');
  const slabs = await stats('slabs');
  check('active_slabs' in slabs, 'stats slabs');
  c.close();
  console.log(`memjs (binary protocol): ${failures ? 'done' : 'all checks passed'}`);
}

async function memjsSasl() {
  const memjs = require('memjs');
  const opts = { timeout: 5, conntimeout: 5, retries: 0, logger: quiet };
  const bad = memjs.Client.create(server, { ...opts, username: 'rhkv', password: 'wrong-password' });
  let refused = false;
  try {
    refused = (await bad.set('s', 'x', {})) !== true;
  } catch (e) {
    refused = true;
  }
  bad.close();
  check(refused, 'set with a wrong password succeeded');
  const c = memjs.Client.create(server, { ...opts, username: 'rhkv', password });
  check(await c.set('s', 'secret', {}) === true, 'set after SASL PLAIN');
  const r = await c.get('s');
  check(r.value !== null && r.value.toString() === 'secret', 'get after SASL PLAIN');
  c.close();
  console.log(`memjs (binary protocol, SASL PLAIN): ${failures ? 'done' : 'all checks passed'}`);
}

async function memcachedChecks() {
  const Memcached = require('memcached');
  const c = new Memcached(server, { timeout: 10000, retries: 0, retry: 60000, poolSize: 1 });
  const p = {};
  for (const m of ['set', 'get', 'getMulti', 'gets', 'cas', 'add', 'replace', 'append',
    'prepend', 'incr', 'decr', 'del', 'touch', 'flush', 'stats', 'items', 'slabs', 'version']) {
    p[m] = util.promisify(c[m]).bind(c);
  }
  check((await p.flush()).every((ok) => ok === true), 'flush');
  check(await p.set('k', 'v', 0) === true, 'set');
  check(await p.get('k') === 'v', 'get after set');
  check(await p.get('nx') === undefined, 'get of a missing key');
  let refused = false;
  try {
    await p.add('k', 'x', 0);
  } catch (e) {
    refused = /NOT_STORED|Item is not stored/.test(String(e));
  }
  check(refused, 'add of an existing key');
  check(await p.add('k2', '2', 0) === true, 'add');
  check(await p.replace('nx', 'x', 0).catch(() => false) === false, 'replace of a missing key');
  check(await p.append('k2', '3') === true && await p.prepend('k2', '1') === true,
    'append/prepend');
  check(await p.get('k2') === '123', 'append/prepend result');

  check(await p.set('n', '10', 0), 'set n');
  check(await p.incr('n', 5) === 15, 'incr');
  check(await p.decr('n', 100) === 0, 'decr below 0');
  check(await p.incr('nx', 1) === false, 'incr of a missing key');

  const g = await p.gets('k');
  check(g && g.k === 'v' && g.cas, 'gets');
  check(await p.cas('k', 'w', g.cas, 0) === true, 'cas with the fresh unique');
  check(await p.cas('k', 'x', g.cas, 0) === false, 'cas with a stale unique');
  check(await p.get('k') === 'w', 'value after cas');

  check(await p.del('k') === true && await p.get('k') === undefined, 'delete');
  check(await p.del('k') === false, 'delete of a missing key');

  // TTL 3 and the untouched 'u': see memjsChecks.
  check(await p.set('t', 't', 3), 'set with a TTL');
  check(await p.set('u', 'u', 3), 'set with a TTL');
  check(await p.touch('t', 100) === true, 'touch');
  check(await p.touch('nx', 100) === false, 'touch of a missing key');
  check(await untilGone(async () => await p.get('u') === undefined), 'a TTL of 3 s never expired');
  check(await p.get('t') === 't', 'touch did not extend the TTL');

  for (const size of SIZES) {
    const v = crypto.randomBytes(Math.ceil(size / 2)).toString('hex').slice(0, size);
    check(await p.set(`size:${size}`, v, 0) === true, `set of ${size} bytes`);
    check(await p.get(`size:${size}`) === v, `get of ${size} bytes`);
  }

  // Control bytes (not whitespace, not NUL) in a text key.
  const ctl = 'ctl\x01\x02\x07\x1b\x7f:key';
  check(await p.set(ctl, 'control', 0) === true, 'set of a key with control bytes');
  check(await p.get(ctl) === 'control', 'get of a key with control bytes');
  check(await p.del(ctl) === true, 'delete of a key with control bytes');

  for (let i = 0; i < MANY.length; i += 500) {
    const ok = await Promise.all(MANY.slice(i, i + 500).map((k, j) => p.set(k, `v${i + j}`, 0)));
    check(ok.every((x) => x === true), `sets of keys ${i}..${i + 499}`);
  }
  // One get line of about 120 KB.
  const got = await p.getMulti(MANY.concat(['nx1', 'nx2']));
  const right = MANY.filter((k, i) => got[k] === `v${i}`);
  check(right.length === 5000 && Object.keys(got).length === 5000,
    `getMulti of 5,000 keys: ${Object.keys(got).length} came back, ${right.length} right`);

  const [st] = await p.stats();
  check(Number(st.curr_items) >= 5000, `stats curr_items: ${st.curr_items}`);
  check(/^\d+\.\d+/.test(String((await p.version())[0].version)), 'version');
  const [items] = await p.items();
  const classes = Object.keys(items).filter((k) => /^\d+$/.test(k));
  check(classes.length > 0 && Number(items[classes[0]].number) > 0,
    `stats items: ${JSON.stringify(items).slice(0, 200)}`);
  const [slabs] = await p.slabs();
  check(Object.keys(slabs).some((k) => /^\d+$/.test(k) && Number(slabs[k].chunk_size) > 0),
    `stats slabs: ${JSON.stringify(slabs).slice(0, 200)}`);
  c.end();
  console.log(`memcached (text protocol): ${failures ? 'done' : 'all checks passed'}`);
}

const run = { memjs: memjsChecks, memcached: memcachedChecks, sasl: memjsSasl }[mode];
check(run !== undefined, `unknown mode ${mode}`);
const watchdog = setTimeout(() => check(false, `${mode}: no end after 120 s`), 120000);
run().then(() => {
  clearTimeout(watchdog);
  if (failures) {
    console.error(`${failures} checks failed`);
    process.exit(1);
  }
}, (e) => {
  console.error(`FAIL: ${mode}: ${e && e.stack}`);
  process.exit(1);
});
