# gnuplot docs/img/per_event_cost.gp (from the repository root) draws per_event_cost.svg
# from per_event_cost.dat (docs/model.md, "Speed").
set terminal svg size 640,400 font "sans,11"
set output "docs/img/per_event_cost.svg"
set logscale x 2
set xlabel "CPUs (two hogs per CPU, HZ=250)"
set ylabel "ns of CPU time per event"
set y2label "instructions per event"
set yrange [0:*]
set y2range [0:*]
set ytics nomirror
set y2tics
set key top left
set grid
plot "docs/img/per_event_cost.dat" using 1:3 with linespoints lw 2 pt 7 title "ns per event", \
     "docs/img/per_event_cost.dat" using 1:4 axes x1y2 with linespoints lw 2 pt 5 dt 2 title "instructions per event"
