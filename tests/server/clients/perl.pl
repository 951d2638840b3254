# Cache::Memcached::Fast against the server on 127.0.0.1:PORT (argv[0]),
# text protocol. Run by test_client_perl.sh; dies at the first failed check.
use strict;
use warnings;
use Cache::Memcached::Fast;

my $port = $ARGV[0];
my $m = Cache::Memcached::Fast->new({
    servers => ["127.0.0.1:$port"],
    connect_timeout => 5,
    io_timeout => 10,
    compress_threshold => -1,
    max_size => 2 * 1024 * 1024,
    close_on_error => 1,
});

# RHKV_CLIENT_KEEP_GOING=1: report every failed check, fail at the end.
my $failures = 0;
sub check {
    my ($cond, $what) = @_;
    return if $cond;
    warn "FAIL: $what\n";
    exit 1 unless ($ENV{RHKV_CLIENT_KEEP_GOING} // '') eq '1';
    $failures++;
}
END { if ($failures) { warn "$failures checks failed\n"; $? = 1; } }

sub urandom {
    my ($n) = @_;
    open(my $fh, '<:raw', '/dev/urandom') or die "urandom: $!";
    my $got = read($fh, my $buf, $n);
    close $fh;
    die "urandom: short read" unless defined $got && $got == $n;
    return $buf;
}

check($m->flush_all, 'flush_all');
check($m->set('k', 'v'), 'set');
check(($m->get('k') // '') eq 'v', 'get after set');
check(!defined $m->get('nx'), 'get of a missing key');
my $r = $m->add('k', 'x');
check(defined $r && !$r, 'add of an existing key');
check($m->add('k2', '2'), 'add');
$r = $m->replace('nx', 'x');
check(defined $r && !$r, 'replace of a missing key');
check($m->append('k2', '3') && $m->prepend('k2', '1'), 'append/prepend');
check($m->get('k2') eq '123', 'append/prepend result');

check($m->set('n', 10), 'set n');
check($m->incr('n', 5) == 15, 'incr');
check($m->decr('n', 100) == 0, 'decr below 0');
$r = $m->incr('nx', 1);
check(defined $r && !$r, 'incr of a missing key');

my $cv = $m->gets('k');
check($cv && $$cv[1] eq 'v' && $$cv[0], 'gets');
check($m->cas('k', $$cv[0], 'w'), 'cas with the fresh unique');
$r = $m->cas('k', $$cv[0], 'x');
check(defined $r && !$r, 'cas with a stale unique');
check($m->get('k') eq 'w', 'value after cas');

check($m->delete('k') && !defined $m->get('k'), 'delete');
$r = $m->delete('k');
check(defined $r && !$r, 'delete of a missing key');

# A relative TTL of N seconds may end after N - 1 (at a second boundary):
# 3 leaves the touch 2 seconds. 'u', set after 't' with the same TTL and not
# touched, tells when 't' would have expired.
check($m->set('t', 't', 3), 'set with a TTL');
check($m->set('u', 'u', 3), 'set with a TTL');
check($m->touch('t', 100), 'touch');
$r = $m->touch('nx', 100);
check(defined $r && !$r, 'touch of a missing key');
check(($m->gat(100, 't') // '') eq 't', 'gat');
my $gone = 0;
for (1 .. 600) {
    $gone = !defined $m->get('u');
    last if $gone;
    select(undef, undef, undef, 0.1);
}
check($gone, 'a TTL of 3 s never expired');
check(($m->get('t') // '') eq 't', 'touch did not extend the TTL');

for my $size (1, 100, 1000, 10_000, 100_000, 1_000_000) {
    my $v = urandom($size);
    check($m->set("size:$size", $v), "set of $size bytes");
    check(($m->get("size:$size") // '') eq $v, "get of $size bytes");
}

# Control bytes (not space, CR, LF or NUL) in a key.
my $ctl = "ctl\x01\x02\x07\x1b\x7f:key";
check($m->set($ctl, 'control'), 'set of a key with control bytes');
check(($m->get($ctl) // '') eq 'control', 'get of a key with control bytes');
my $h = $m->get_multi($ctl, 'ctl');
check(keys %$h == 1 && $h->{$ctl} eq 'control',
      'get_multi of a key with control bytes');
check($m->delete($ctl) && !defined $m->get($ctl),
      'delete of a key with control bytes');

# 5,000 keys of 23 bytes: one get line of about 120 KB.
my %values = map { (sprintf('multiget:%05d:abcdefgh', $_) => "v$_") } 0 .. 4999;
my @res = $m->set_multi(map { [$_, $values{$_}] } sort keys %values);
check(@res == 5000 && !grep({ !$_ } @res), 'set_multi of 5,000 keys');
$h = $m->get_multi(keys %values, 'nx1', 'nx2');
check(keys %$h == 5000, 'get_multi of 5,000 keys: ' . scalar(keys %$h) . ' came back');
my $wrong = grep { ($h->{$_} // '') ne $values{$_} } keys %values;
check($wrong == 0, "get_multi of 5,000 keys: $wrong values wrong or missing");
$h = $m->gets_multi(keys %values);
check(keys %$h == 5000 && !grep({ ($h->{$_}[1] // '') ne $values{$_} } keys %values),
      'gets_multi of 5,000 keys');

my $vers = $m->server_versions;
check(($vers->{"127.0.0.1:$port"} // '') =~ /^\d+\.\d+/,
      'server_versions');
print "Cache::Memcached::Fast: all checks passed\n" unless $failures;
