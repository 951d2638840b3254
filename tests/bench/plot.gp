# plot.gp: the PNGs of tests/bench/compare (run by compare_report.py).
#   gnuplot -e "kind='bars'; data='throughput.dat'; out='x.png'; ttl=''; labels=''" plot.gp
#   gnuplot -e "kind='cdf'; data='latency-W1.dat'; out='y.png'; ttl='W1'; labels='a|b'" plot.gp
# bars: a header line, then "workload" rhkvd memcached fixed-reply (kops/s,
# - where absent). cdf: one block per series (x = 1/(1-percentile), latency
# in µs, percentile), labels the series' names separated by |.
if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
	set terminal pngcairo size 900,520 enhanced font ",10"
} else {
	set terminal png size 900,520
}
set output out
set grid ytics
set key top left

if (kind eq "bars") {
	set title "Throughput (rhkv-bench, medians over the rounds)"
	set ylabel "thousand requests/s"
	set style data histograms
	set style histogram clustered gap 1
	set style fill solid 0.85 border -1
	set boxwidth 0.9
	set yrange [0:*]
	set datafile missing "-"
	set xtics nomirror
	plot data using 2:xtic(1) title columnheader(2) lc rgb "#1f77b4", \
	     '' using 3 title columnheader(3) lc rgb "#ff7f0e", \
	     '' using 4 title columnheader(4) lc rgb "#7f7f7f"
} else {
	set title ttl
	set logscale x
	set logscale y
	set xrange [1.5:15000]
	set xtics ("p50" 2, "p90" 10, "p99" 100, "p99.9" 1000, "max" 10000)
	set xlabel "percentile"
	set ylabel "latency (µs)"
	set format y "%.0f"
	# Split labels on | (gnuplot has no split: walk the string).
	rest = labels."|"
	array L[16]
	k = 0
	while (strlen(rest) > 0 && k < 16) {
		p = strstrt(rest, "|")
		k = k + 1
		L[k] = rest[1:p - 1]
		rest = rest[p + 1:]
	}
	plot for [i = 0:k - 1] data index i using 1:2 with linespoints lw 2 pt 7 title L[i + 1]
}
