# bench/stats.sh - sourced by the bench scripts: medians, paired ratios and
# their bootstrap intervals, and a verdict against a goal.

# What the benches measure runs at nice 0, as a user's program does, whatever
# the nice of the shell that started them: from a shell at nice -20 the
# traced program ran at the recorder's own nice -20, its threads then
# took the CPU the recorder needed, and bench/burst.sh's 500 threads lost
# 0.5-3.6 M of 5 M events in most runs (at nice 0, none in 3 runs of 4).
if [ "$(id -u)" = 0 ] && [ "$(nice)" != 0 ]; then
  renice -n 0 -p $$ >/dev/null
fi

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# The median's 95% interval by bootstrap: 2000 resamples (with
# replacement) of the values on stdin, the 2.5th and 97.5th percentiles of
# their medians. An interval that contains the goal means the run cannot
# tell the two sides apart.
interval() {
  awk 'function isort(a, n,   i, j, v) {   # mawk has no asort
         for (i = 2; i <= n; i++) { v = a[i]; for (j = i - 1; j > 0 && a[j] > v; j--) a[j + 1] = a[j]; a[j + 1] = v }
       }
       BEGIN {srand(1)} {r[NR] = $1}
       END {
         n = NR
         if (n == 0) { print "none"; exit }
         for (b = 1; b <= 2000; b++) {
           for (i = 1; i <= n; i++) s[i] = r[int(rand() * n) + 1]
           isort(s, n); m[b] = s[int((n + 1) / 2)]   # median() above: the lower middle
         }
         isort(m, 2000); printf "%.3f-%.3f", m[50], m[1951]
       }'
}

# verdict INTERVAL GOAL [above]: is the value <= GOAL (>= GOAL with "above")?
verdict() {
  awk -F- -v g="$2" -v dir="${3:-below}" '{
    if ($1 == "none") { print "no runs"; exit }
    lo = $1; hi = $2
    if (dir == "above") { t = lo; lo = -hi; hi = -t; g = -g }
    if (hi <= g) print "met"; else if (lo > g) print "not met"; else print "within noise (the interval contains the goal)"
  }' <<<"$1"
}

# ratios FILE_A FILE_B: A's values over B's (one value a line), line by line.
ratios() { paste -d' ' "$1" "$2" | awk '{print $1 / $2}'; }

# label TEXT: a row's name, padded to the column the bench scripts print
# their figures in.
label() { printf '%-40s: ' "$1"; }
