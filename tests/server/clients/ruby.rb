# frozen_string_literal: true

# Dalli 3.0 (memcached's binary protocol only) against the server on
# 127.0.0.1:PORT (ARGV[0]). Run by test_client_ruby.sh; exits 1 at the
# first failed check.
require 'dalli'
require 'securerandom'

port = ARGV.fetch(0)

# RHKV_CLIENT_KEEP_GOING=1: report every failed check, fail at the end.
$failures = 0 # rubocop:disable Style/GlobalVars
at_exit { exit 1 if $failures.positive? } # rubocop:disable Style/GlobalVars

def check(cond, what)
  return if cond

  warn "FAIL: #{what}"
  exit 1 unless ENV['RHKV_CLIENT_KEEP_GOING'] == '1'
  $failures += 1 # rubocop:disable Style/GlobalVars
end

dc = Dalli::Client.new("127.0.0.1:#{port}",
                       compress: false, socket_timeout: 10,
                       socket_max_failures: 1, down_retry_delay: 60,
                       value_max_bytes: 2 * 1024 * 1024)
raw = { raw: true }

# Dalli 3.0.6's storage commands return the new CAS on success, and false,
# nil or (replace of a missing key) 0 otherwise.
def stored?(reply)
  reply && reply != 0
end

check(dc.flush, 'flush')
check(dc.set('k', 'v', nil, raw), 'set')
check(dc.get('k') == 'v', 'get after set')
check(dc.get('nx').nil?, 'get of a missing key')
check(!stored?(dc.add('k', 'x', nil, raw)), 'add of an existing key')
check(dc.get('k') == 'v', 'add changed an existing key')
check(dc.add('k2', '2', nil, raw), 'add')
check(!stored?(dc.replace('nx', 'x', nil, raw)) && dc.get('nx').nil?, 'replace of a missing key')
check(dc.append('k2', '3') && dc.prepend('k2', '1'), 'append/prepend')
check(dc.get('k2') == '123', 'append/prepend result')

check(dc.set('n', '10', nil, raw), 'set n')
check(dc.incr('n', 5) == 15, 'incr')
check(dc.decr('n', 100).zero?, 'decr below 0')
check(dc.incr('nx', 1).nil?, 'incr of a missing key')
check(dc.incr('nx', 1, nil, 7) == 7, 'incr with an initial value')
check(dc.get('nx') == '7', 'value created by incr')

value, cas = dc.get_cas('k')
check(value == 'v' && cas.positive?, 'get_cas')
check(dc.set_cas('k', 'w', cas, nil, raw), 'set_cas with the fresh unique')
check(!stored?(dc.set_cas('k', 'x', cas, nil, raw)), 'set_cas with a stale unique')
check(dc.get('k') == 'w', 'value after set_cas')
check(dc.cas('k') { |v| "#{v}w" }, 'cas block')
check(dc.get('k') == 'ww', 'value after cas block')

check(dc.delete('k') && dc.get('k').nil?, 'delete')
check(!dc.delete('k'), 'delete of a missing key')

# A relative TTL of N seconds may end after N - 1 (at a second boundary):
# 3 leaves the touch 2 seconds. 'u', set after 't' with the same TTL and not
# touched, tells when 't' would have expired.
check(dc.set('t', 't', 3, raw), 'set with a TTL')
check(dc.set('u', 'u', 3, raw), 'set with a TTL')
check(dc.touch('t', 100), 'touch')
check(!dc.touch('nx3', 100), 'touch of a missing key')
check(dc.gat('t', 100) == 't', 'gat')
600.times do
  break if dc.get('u').nil?

  sleep 0.1
end
check(dc.get('u').nil?, 'a TTL of 3 s never expired')
check(dc.get('t') == 't', 'touch did not extend the TTL')

[1, 100, 1000, 10_000, 100_000, 1_000_000].each do |size|
  v = SecureRandom.random_bytes(size)
  check(dc.set("size:#{size}", v, nil, raw), "set of #{size} bytes")
  check(dc.get("size:#{size}") == v, "get of #{size} bytes")
end

# Any bytes in a binary-protocol key: spaces, CR, LF, NUL, control bytes.
ctl = "ctl \x01\x02\x07\x1b\x7f\r\n\x00:key".b
check(dc.set(ctl, 'control', nil, raw), 'set of a key with control bytes')
check(dc.get(ctl) == 'control', 'get of a key with control bytes')
check(dc.get_multi(ctl, 'ctl') == { ctl => 'control' },
      'get_multi of a key with control bytes')
check(dc.delete(ctl) && dc.get(ctl).nil?, 'delete of a key with control bytes')

# 5,000 keys: GETKQ for each, then NOOP.
values = (0...5000).to_h { |i| [format('multiget:%05d:abcdefgh', i), "v#{i}"] }
dc.multi { values.each { |k, v| dc.set(k, v, nil, raw) } }
got = dc.get_multi(values.keys + %w[nx1 nx2])
check(got == values, "get_multi of 5,000 keys: #{got.size} came back, " \
                     "#{values.count { |k, v| got[k] == v }} right")
cas_got = dc.get_multi_cas(values.keys)
check(cas_got.size == 5000 && values.all? { |k, v| cas_got[k][0] == v && cas_got[k][1].positive? },
      'get_multi_cas of 5,000 keys')

ver = dc.version.values.first
check(ver.is_a?(String) && ver =~ /\A\d+\.\d+/, "version: #{ver.inspect}")
st = dc.stats.values.first
check(st && st['curr_items'].to_i >= 5000, "stats curr_items: #{st&.fetch('curr_items', nil)}")
items = dc.stats(:items).values.first
check(items && items.keys.any? { |k| k =~ /\Aitems:\d+:number\z/ }, "stats items: #{items.inspect[0, 200]}")
slabs = dc.stats(:slabs).values.first
check(slabs&.key?('active_slabs'), "stats slabs: #{slabs.inspect[0, 200]}")
dc.close
puts "Dalli (binary protocol): #{$failures.zero? ? 'all checks passed' : 'done'}" # rubocop:disable Style/GlobalVars
