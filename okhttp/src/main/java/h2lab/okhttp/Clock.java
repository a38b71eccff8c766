package h2lab.okhttp;

/** The trial's clock: ms since {@link #start()}, on the JVM's monotonic clock. */
final class Clock {
  private volatile long startNanos;

  /** Starts the trial's time (just before the first call is enqueued). */
  void start() {
    startNanos = System.nanoTime();
  }

  double ms() {
    return (System.nanoTime() - startNanos) / 1e6;
  }
}
