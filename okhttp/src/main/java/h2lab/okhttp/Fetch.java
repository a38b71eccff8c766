package h2lab.okhttp;

import java.io.IOException;
import java.util.concurrent.CountDownLatch;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.Response;
import okhttp3.ResponseBody;
import okio.Buffer;
import okio.BufferedSource;

/**
 * The callback of one enqueued call: reads the whole body on the Dispatcher's thread, as an app
 * does, so that the call holds its slot of the per-host limit until its last byte is read.
 */
final class Fetch implements Callback {
  private static final long READ_CHUNK_BYTES = 64 * 1024;

  private final CallRecord record;
  private final Clock clock;
  private final CountDownLatch done;

  Fetch(CallRecord record, Clock clock, CountDownLatch done) {
    this.record = record;
    this.clock = clock;
    this.done = done;
  }

  @Override
  public void onResponse(Call call, Response response) {
    try (ResponseBody body = response.body()) {
      record.status = response.code();
      BufferedSource source = body.source();
      Buffer sink = new Buffer();
      long total = 0;
      for (long n; (n = source.read(sink, READ_CHUNK_BYTES)) != -1; ) {
        total += n;
        sink.clear();
      }
      record.bytes = total;
    } catch (IOException e) {
      record.error = describe(e);
    } finally {
      if (record.endMs == null) {
        record.endMs = clock.ms();
      }
      done.countDown();
    }
  }

  @Override
  public void onFailure(Call call, IOException e) {
    record.error = describe(e);
    record.endMs = clock.ms();
    done.countDown();
  }

  /**
   * {@code java.net.ConnectException: Failed to connect to ...}, with the first cause, on one
   * line (OkHttp's hostname errors span several).
   */
  static String describe(Throwable e) {
    String text = e.getClass().getName() + ": " + e.getMessage();
    Throwable cause = e.getCause();
    if (cause != null && cause != e && !text.contains(String.valueOf(cause.getMessage()))) {
      text += " (" + cause.getClass().getName() + ": " + cause.getMessage() + ")";
    }
    return text.strip().replaceAll("\\s*\\n\\s*", " ");
  }
}
