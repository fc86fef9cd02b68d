# gnuplot docs/img/per_event_cost.gp (from the repository root) draws per_event_cost.svg
# from per_event_cost.dat (docs/model.md, "Speed").
set terminal svg size 640,400 font "sans,11"
set output "docs/img/per_event_cost.svg"
set logscale x 2
set xlabel "CPUs (two hogs per CPU, HZ=250)"
set ylabel "ns of CPU time per event"
set key off
set grid
plot "docs/img/per_event_cost.dat" using 1:5 with linespoints lw 2 pt 7
