/* SIDES (bench_sides.c): each side of a blq queue's cost per item alone,
 * on one CPU and on two. */
#ifndef BLQ_BENCH_SIDES_H
#define BLQ_BENCH_SIDES_H

/* Runs `rounds` (1..64) rounds of each and prints two BENCH SIDES lines
 * (cpus=two, cpus=one): medians of the rounds' ns per item. 0, or -1
 * (said why on stderr). */
int bench_sides(unsigned rounds);

#endif
