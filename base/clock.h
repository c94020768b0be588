// Time: a monotonic clock and a plain sleep.
#ifndef CABIN_BASE_CLOCK_H
#define CABIN_BASE_CLOCK_H

// Monotonic clock in seconds.
double now_sec(void);
// Sleeps ms milliseconds, fractions included (ms <= 0 returns at once); a signal may end it
// early.
void sleep_ms(double ms);

#endif
