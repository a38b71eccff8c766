package h2lab.okhttp;

import com.google.gson.FieldNamingPolicy;
import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonParseException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * One trial's plan, as h2lab's Python adapter writes it (src/h2lab/clients/okhttp.py, {@code
 * plan_json}). Read once and checked; the trial trusts it afterwards.
 */
final class Plan {
  static final List<String> PROTOCOLS = List.of("h1c", "h1s", "h2s", "h2c");
  static final Gson JSON =
      new GsonBuilder()
          .setFieldNamingPolicy(FieldNamingPolicy.LOWER_CASE_WITH_UNDERSCORES)
          .serializeNulls()
          .create();

  /** h1c, h1s, h2s or h2c (h1p and h3 are refused by the Python adapter already). */
  String protocol;

  /** every URL to fetch, in the order the calls are enqueued (the entry document first) */
  List<String> urls;

  /** hostname -> IP literal: the only names the client resolves */
  Map<String, String> hosts;

  /** the lab CA (PEM), the only certificate the client trusts; needed for h1s and h2s */
  String caPem;

  /** {@code Dispatcher.maxRequestsPerHost}: OkHttp ships 5 */
  int maxRequestsPerHost = 5;

  /** {@code Dispatcher.maxRequests}: OkHttp ships 64 */
  int maxRequests = 64;

  /** TCP_NODELAY on the client's sockets (OkHttp leaves Nagle's algorithm on: false) */
  boolean tcpNodelay;

  /** how long the trial may take, from the first call enqueued to the last one done */
  long timeoutMs;

  boolean tls() {
    return protocol.equals("h1s") || protocol.equals("h2s");
  }

  /** The plan in {@code file}; an {@link IllegalArgumentException} says what is wrong. */
  static Plan read(Path file) throws IOException {
    Plan plan;
    try {
      plan = JSON.fromJson(Files.readString(file, StandardCharsets.UTF_8), Plan.class);
    } catch (JsonParseException e) {
      throw new IllegalArgumentException(file + ": not a plan: " + e.getMessage(), e);
    }
    if (plan == null) {
      throw new IllegalArgumentException(file + ": empty plan");
    }
    plan.check(file.toString());
    return plan;
  }

  private void check(String source) {
    if (protocol == null || !PROTOCOLS.contains(protocol)) {
      throw bad(source, "protocol", "must be one of " + PROTOCOLS + ", got " + protocol);
    }
    if (urls == null || urls.isEmpty()) {
      throw bad(source, "urls", "must list at least one URL");
    }
    if (hosts == null) {
      throw bad(source, "hosts", "missing (hostname -> address)");
    }
    if (tls() && caPem == null) {
      throw bad(source, "ca_pem", "needed for " + protocol);
    }
    if (maxRequestsPerHost < 1 || maxRequests < 1) {
      throw bad(source, "max_requests_per_host/max_requests", "must be at least 1");
    }
    if (timeoutMs <= 0) {
      throw bad(source, "timeout_ms", "must be positive, got " + timeoutMs);
    }
  }

  private static IllegalArgumentException bad(String source, String field, String why) {
    return new IllegalArgumentException(source + ": " + field + ": " + why);
  }
}
