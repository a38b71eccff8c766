package h2lab.okhttp;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.X509TrustManager;
import okhttp3.ConnectionPool;
import okhttp3.Dispatcher;
import okhttp3.OkHttpClient;
import okhttp3.Protocol;
import okhttp3.Request;

/**
 * One page load: a fresh {@link OkHttpClient} (its own Dispatcher and ConnectionPool), every
 * URL enqueued at once, the Dispatcher's limits deciding how many run, all awaited with the
 * plan's bound. Nothing outlives the trial: the JVM exits after it.
 */
final class Trial {
  /** how long cancelled calls get to report after the bound ran out */
  private static final long CANCEL_GRACE_MS = 2000;

  private final Plan plan;
  private final Clock clock = new Clock();
  private final List<CallRecord> records = new ArrayList<>();
  private final Recorder recorder;
  private final SSLContext tls;
  private final OkHttpClient client;

  Trial(Plan plan) throws IOException, GeneralSecurityException {
    this.plan = plan;
    for (int i = 0; i < plan.urls.size(); i++) {
      records.add(new CallRecord(i, plan.urls.get(i)));
    }
    recorder = new Recorder(clock, records);
    Dispatcher dispatcher = new Dispatcher();
    dispatcher.setMaxRequests(plan.maxRequests);
    dispatcher.setMaxRequestsPerHost(plan.maxRequestsPerHost);
    // OkHttp's 10 s connect/read/write defaults would fail loads that a slow, lossy link
    // takes longer over (seed 001's grid goes down to 1 Mbit/s at 2% loss): the plan's
    // bound is the only limit (no call timeout either: one firing a moment before the bound
    // would record a late call as its own failure). Redirects are not followed: one request
    // per resource, as h2load makes.
    OkHttpClient.Builder b =
        new OkHttpClient.Builder()
            .dispatcher(dispatcher)
            .connectionPool(new ConnectionPool())
            .dns(LabNetwork.dns(plan.hosts))
            .protocols(protocols(plan.protocol))
            .eventListener(recorder)
            .followRedirects(false)
            .connectTimeout(0, TimeUnit.MILLISECONDS)
            .readTimeout(0, TimeUnit.MILLISECONDS)
            .writeTimeout(0, TimeUnit.MILLISECONDS);
    if (plan.tcpNodelay) {
      b.socketFactory(new NoDelaySockets());
    }
    if (plan.caPem != null) {
      X509TrustManager trust = LabNetwork.trustOnly(Path.of(plan.caPem));
      tls = LabNetwork.tls(trust);
      b.sslSocketFactory(tls.getSocketFactory(), trust);
    } else {
      tls = null;
    }
    client = b.build();
  }

  /** OkHttp's protocol list for an h2lab protocol name (checked by {@link Plan}). */
  static List<Protocol> protocols(String protocol) {
    return switch (protocol) {
      case "h1c", "h1s" -> List.of(Protocol.HTTP_1_1);
      case "h2s" -> List.of(Protocol.HTTP_2, Protocol.HTTP_1_1);
      case "h2c" -> List.of(Protocol.H2_PRIOR_KNOWLEDGE);
      default -> throw new IllegalArgumentException("protocol: unknown " + protocol);
    };
  }

  /** Runs the load; the result says what each call did, failed ones included. */
  Result run() throws InterruptedException {
    warmUp();
    List<Request> requests = new ArrayList<>();
    for (CallRecord r : records) {
      requests.add(new Request.Builder().url(r.url).tag(Integer.class, r.index).build());
    }
    CountDownLatch done = new CountDownLatch(requests.size());
    double startupMs = ManagementFactory.getRuntimeMXBean().getUptime();
    clock.start();
    for (int i = 0; i < requests.size(); i++) {
      client.newCall(requests.get(i)).enqueue(new Fetch(records.get(i), clock, done));
    }
    boolean finished = done.await(plan.timeoutMs, TimeUnit.MILLISECONDS);
    if (!finished) {
      List<CallRecord> late = new ArrayList<>();
      for (CallRecord r : records) {
        if (r.endMs == null && r.error == null) {
          late.add(r);
        }
      }
      client.dispatcher().cancelAll();
      done.await(CANCEL_GRACE_MS, TimeUnit.MILLISECONDS);
      for (CallRecord r : late) { // their cancellation is not their error
        r.error = "not finished within the trial's " + plan.timeoutMs + " ms";
      }
    }
    double totalMs = clock.ms();
    return new Result(plan, startupMs, totalMs, !finished, recorder, records);
  }

  /**
   * Loads, in this JVM and before the clock starts, OkHttp's and Okio's classes ({@link
   * Preload}; {@code -Dh2lab.noPreload=true} skips it, to measure what it saves) and the
   * classes the first TLS handshake needs (a ClientHello made in memory; nothing is sent):
   * class loading is JVM start-up, not page load. Nothing is kept: the client has no
   * connection yet.
   */
  private void warmUp() {
    if (!Boolean.getBoolean("h2lab.noPreload")) {
      Preload.classes();
    }
    if (tls == null) {
      return;
    }
    try {
      SSLEngine engine = tls.createSSLEngine("warm-up.invalid", 443);
      engine.setUseClientMode(true);
      engine.beginHandshake();
      ByteBuffer out = ByteBuffer.allocate(engine.getSession().getPacketBufferSize());
      engine.wrap(ByteBuffer.allocate(0), out);
      engine.closeOutbound();
    } catch (IOException e) {
      // only a warm-up: the trial's own handshakes report their errors
    }
  }
}
