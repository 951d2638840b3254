<?php
// php-memcached (libmemcached underneath) against the server on
// 127.0.0.1:PORT. Usage: php php.php PORT text|binary
//                        php php.php PORT sasl PASSWORD
// Run by test_client_php.sh; exits non-zero at the first failed check.

// RHKV_CLIENT_KEEP_GOING=1: report every failed check, fail at the end.
$failures = 0;
register_shutdown_function(function () {
    global $failures;
    if ($failures > 0) {
        fwrite(STDERR, "$failures checks failed\n");
        exit(1);
    }
});

function check($cond, $what)
{
    global $failures;
    if (!$cond) {
        fwrite(STDERR, "FAIL: $what\n");
        if (getenv('RHKV_CLIENT_KEEP_GOING') !== '1') {
            exit(1);
        }
        $failures++;
    }
}

function client($port, $binary)
{
    $m = new Memcached();
    $m->setOptions([
        Memcached::OPT_BINARY_PROTOCOL => $binary,
        Memcached::OPT_COMPRESSION => false,
        Memcached::OPT_CONNECT_TIMEOUT => 5000,
        Memcached::OPT_RECV_TIMEOUT => 10000000,
        Memcached::OPT_SEND_TIMEOUT => 10000000,
        Memcached::OPT_POLL_TIMEOUT => 10000,
    ]);
    check($m->addServer('127.0.0.1', (int)$port), 'addServer');
    return $m;
}

function res($m)
{
    return $m->getResultCode();
}

function basics($m, $mode)
{
    check($m->flush(), "flush: " . $m->getResultMessage());
    check($m->set('k', 'v'), 'set: ' . $m->getResultMessage());
    check($m->get('k') === 'v', 'get after set');
    check($m->get('nx') === false && res($m) === Memcached::RES_NOTFOUND,
          'get of a missing key');
    // NOT_STORED in text; binary's status 0x0002, key exists.
    check(!$m->add('k', 'x') && in_array(res($m), [Memcached::RES_NOTSTORED,
                                                   Memcached::RES_DATA_EXISTS], true),
          'add of an existing key');
    check($m->get('k') === 'v', 'add changed an existing key');
    check($m->add('k2', '2'), 'add');
    check(!$m->replace('nx', 'x'), 'replace of a missing key');
    check($m->append('k2', '3') && $m->prepend('k2', '1'), 'append/prepend');
    check($m->get('k2') === '123', 'append/prepend result');

    check($m->set('n', '10'), 'set n');
    check($m->increment('n', 5) === 15, 'increment');
    check($m->decrement('n', 100) === 0, 'decrement below 0');
    check($m->increment('nx', 1) === false, 'increment of a missing key');

    $r = $m->get('k', null, Memcached::GET_EXTENDED);
    check(is_array($r) && $r['value'] === 'v' && $r['cas'] > 0, 'get with cas');
    check($m->cas($r['cas'], 'k', 'w'), 'cas with the fresh unique');
    check(!$m->cas($r['cas'], 'k', 'x') && res($m) === Memcached::RES_DATA_EXISTS,
          'cas with a stale unique');
    check($m->get('k') === 'w', 'value after cas');

    check($m->delete('k') && $m->get('k') === false, 'delete');
    check(!$m->delete('k') && res($m) === Memcached::RES_NOTFOUND,
          'delete of a missing key');

    // A relative TTL of N seconds may end after N - 1 (at a second
    // boundary): 3 leaves the touch 2 seconds. 'u', set after 't' with the
    // same TTL and not touched, tells when 't' would have expired.
    check($m->set('t', 't', 3), 'set with a TTL');
    check($m->set('u', 'u', 3), 'set with a TTL');
    check($m->touch('t', 100), "touch: " . $m->getResultMessage());
    check(!$m->touch('nx', 100), 'touch of a missing key');
    for ($try = 0; $try < 600 && $m->get('u') !== false; $try++) {
        usleep(100000);
    }
    check($m->get('u') === false, 'a TTL of 3 s never expired');
    check($m->get('t') === 't', 'touch did not extend the TTL');

    foreach ([1, 100, 1000, 10000, 100000, 1000000] as $size) {
        $v = random_bytes($size);
        check($m->set("size:$size", $v), "set of $size bytes: " . $m->getResultMessage());
        check($m->get("size:$size") === $v, "get of $size bytes");
    }

    // Control bytes and spaces in a key: php-memcached allows them in
    // binary mode (all but LF); in text mode it refuses them itself.
    if ($mode === 'binary') {
        $ctl = "ctl \x01\x02\x07\x1b\x7f\r\x00:key";
        check($m->set($ctl, 'control'), 'set of a key with control bytes: ' . $m->getResultMessage());
        check($m->get($ctl) === 'control', 'get of a key with control bytes');
        check($m->getMulti([$ctl, 'ctl']) === [$ctl => 'control'],
              'getMulti of a key with control bytes');
        check($m->delete($ctl) && $m->get($ctl) === false,
              'delete of a key with control bytes');
    }

    // 5,000 keys of 23 bytes: in text, one get line of about 120 KB.
    $values = [];
    for ($i = 0; $i < 5000; $i++) {
        $values[sprintf('multiget:%05d:abcdefgh', $i)] = "v$i";
    }
    check($m->setMulti($values), 'setMulti of 5,000 keys');
    $got = $m->getMulti(array_merge(array_keys($values), ['nx1', 'nx2']));
    check(is_array($got) && count($got) === 5000,
          "getMulti of 5,000 keys ($mode): " .
          (is_array($got) ? count($got) : 'false') . ' came back: ' .
          $m->getResultMessage());
    $wrong = 0;
    foreach ($values as $k => $v) {
        $wrong += (is_array($got) && ($got[$k] ?? null) === $v) ? 0 : 1;
    }
    check($wrong === 0, "getMulti of 5,000 keys: $wrong values wrong or missing");

    $st = $m->getStats();
    $s = is_array($st) ? reset($st) : false;
    check(is_array($s) && $s['curr_items'] >= 5000, 'getStats curr_items');
    $items = $m->getStats('items');
    $s = is_array($items) ? reset($items) : false;
    check(is_array($s) && isset($s['items:1:number']), "getStats('items')");
    $slabs = $m->getStats('slabs');
    $s = is_array($slabs) ? reset($slabs) : false;
    check(is_array($s) && isset($s['active_slabs']), "getStats('slabs')");

    // getAllKeys: libmemcached's dump (stats items, then stats cachedump
    // per class), text mode only (binary: ACTION NOT SUPPORTED). memcached
    // 1.6 dumps a class's COLD LRU only, where its LRU maintainer moves new
    // items within a second or so: try for 10 s.
    if ($mode === 'binary') {
        echo 'php-memcached (binary): ' . ($GLOBALS['failures'] ? 'done' : 'all checks passed') . "\n";
        return;
    }
    for ($try = 0; $try < 300; $try++) {
        $all = $m->getAllKeys();
        check(is_array($all), 'getAllKeys: ' . $m->getResultMessage());
        $missing = is_array($all) ? array_diff(array_keys($values), $all) : $values;
        if (count($missing) === 0) {
            break;
        }
        usleep(200000);
    }
    check(count($missing) === 0,
          'getAllKeys: ' . count($missing) . ' of the 5,000 keys missing');
    check(in_array('n', $all, true), "getAllKeys lists 'n'");
    echo "php-memcached ($mode): " . ($GLOBALS['failures'] ? 'done' : 'all checks passed') . "\n";
}

function sasl($port, $password)
{
    ini_set('memcached.use_sasl', '1');
    $m = client($port, true);
    $m->setSaslAuthData('rhkv', 'wrong-password');
    check(!$m->set('s', 'x'), 'set with a wrong password succeeded');
    $m = client($port, true);
    $m->setSaslAuthData('rhkv', $password);
    check($m->set('s', 'secret'), 'set after SASL PLAIN: ' . $m->getResultMessage());
    check($m->get('s') === 's' . 'ecret', 'get after SASL PLAIN');
    check($m->increment('n', 1) === false, 'increment of a missing key');
    echo 'php-memcached (binary, SASL PLAIN): ' . ($GLOBALS['failures'] ? 'done' : 'all checks passed') . "\n";
}

[$port, $mode] = [$argv[1], $argv[2]];
if ($mode === 'sasl') {
    sasl($port, $argv[3]);
} else {
    basics(client($port, $mode === 'binary'), $mode);
}
