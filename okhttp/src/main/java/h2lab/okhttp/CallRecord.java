package h2lab.okhttp;

/**
 * What happened to one call, filled in by its {@link Recorder} and its {@link Fetch}. Times are
 * ms from the trial's clock start (the first call enqueued); null: the event did not happen.
 * Written to the result JSON field by field (snake_case).
 */
final class CallRecord {
  final int index;
  final String url;

  /** callStart: the call was enqueued */
  volatile Double queuedMs;

  /** dispatcherQueueEnd: it left the Dispatcher's ready queue (null: it never waited) */
  volatile Double dispatchedMs;

  /** connectStart / connectEnd of the connection this call opened (null: it reused one) */
  volatile Double connectStartMs;

  volatile Double connectEndMs;

  /** requestHeadersStart: the request is being written on its connection */
  volatile Double requestMs;

  /** responseHeadersStart: OkHttp has read the response headers' first bytes */
  volatile Double ttfbMs;

  /** responseBodyEnd: the body's last byte was read (else when the callback finished) */
  volatile Double endMs;

  /** the connection's id (see {@link Recorder}), its negotiated protocol (OkHttp's name) */
  volatile Integer connection;

  volatile String protocol;
  volatile Integer status;

  /** body bytes read */
  volatile Long bytes;

  /** why the call failed (exception class and message); null: it finished */
  volatile String error;

  CallRecord(int index, String url) {
    this.index = index;
    this.url = url;
  }
}
