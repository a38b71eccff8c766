package h2lab.jetty;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.eclipse.jetty.http.HttpField;
import org.eclipse.jetty.http.HttpFields;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpURI;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;

/**
 * Replays a page (docs/pages.md): the same rule as the Go origin's Page.Lookup (exact method +
 * host + target; else the closest recorded query of the same method, host and decoded path;
 * else the first resource of that host and path), the recorded status, content type, kept
 * headers and body. Anything else gets 404 and a line in unserved.log.
 */
final class Replay extends Handler.Abstract {
  /** The other servers' internal paths (nginx's): 404 and not logged, as theirs. */
  static final String INTERNAL = "/.h2lab/";

  private final Map<String, Config.Resource> exact = new HashMap<>();
  private final Map<String, List<Config.Resource>> byQuery = new HashMap<>();
  private final Map<String, Config.Resource> byPath = new HashMap<>();
  private final Map<Config.Resource, byte[]> bodies = new HashMap<>();
  private final OutputStream unserved;

  Replay(Config config) throws IOException {
    Map<String, byte[]> files = new HashMap<>();
    for (Config.Resource r : config.resources) {
      exact.putIfAbsent(r.method + " " + r.host + r.target, r);
      byQuery.computeIfAbsent(r.method + " " + r.host + r.path, k -> new ArrayList<>()).add(r);
      byPath.putIfAbsent(r.host + r.path, r);
      if (r.body != null) {
        // one copy of a body however many resources share it (bodies are named by hash)
        bodies.put(r, files.computeIfAbsent(r.body, Replay::read));
      }
    }
    unserved =
        Files.newOutputStream(
            Path.of(config.unservedLog),
            StandardOpenOption.CREATE,
            StandardOpenOption.WRITE,
            StandardOpenOption.APPEND);
  }

  private static byte[] read(String file) {
    try {
      return Files.readAllBytes(Path.of(file));
    } catch (IOException e) {
      throw new IllegalStateException("body " + file + ": " + e.getMessage(), e);
    }
  }

  Config.Resource lookup(String method, String host, String target) {
    host = host.toLowerCase(Locale.ROOT);
    Config.Resource r = exact.get(method + " " + host + target);
    if (r != null) {
      return r;
    }
    int q = target.indexOf('?');
    String path = percentDecode(q < 0 ? target : target.substring(0, q));
    String query = q < 0 ? "" : target.substring(q + 1);
    List<Config.Resource> same = byQuery.get(method + " " + host + path);
    if (same != null) {
      return closest(same, query);
    }
    return byPath.get(host + path);
  }

  /** The first of ``same`` whose recorded query shares the longest prefix with ``query``. */
  static Config.Resource closest(List<Config.Resource> same, String query) {
    Config.Resource best = same.get(0);
    int bestLen = -1;
    for (Config.Resource r : same) {
      int n = 0;
      while (n < r.query.length() && n < query.length() && r.query.charAt(n) == query.charAt(n)) {
        n++;
      }
      if (n > bestLen) {
        best = r;
        bestLen = n;
      }
    }
    return best;
  }

  /** %XX escapes as UTF-8 (not '+'), as Python's unquote that made the recorded paths. */
  static String percentDecode(String s) {
    if (s.indexOf('%') < 0) {
      return s;
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    byte[] raw = s.getBytes(StandardCharsets.UTF_8);
    for (int i = 0; i < raw.length; i++) {
      int hi = i + 2 < raw.length ? Character.digit(raw[i + 1], 16) : -1;
      int lo = i + 2 < raw.length ? Character.digit(raw[i + 2], 16) : -1;
      if (raw[i] == '%' && hi >= 0 && lo >= 0) {
        out.write(hi * 16 + lo);
        i += 2;
      } else {
        out.write(raw[i]);
      }
    }
    return out.toString(StandardCharsets.UTF_8);
  }

  @Override
  public boolean handle(Request request, Response response, Callback callback) {
    HttpURI uri = request.getHttpURI();
    String host = uri.getHost() != null ? uri.getHost() : Request.getServerName(request);
    String target = uri.getPathQuery() != null ? uri.getPathQuery() : "/";
    Config.Resource res = lookup(request.getMethod(), host, target);
    if (res == null) {
      if (!target.startsWith(INTERNAL)) {
        String scheme = request.isSecure() ? "https" : "http";
        logUnserved(request.getMethod() + " " + scheme + "://" + host + target);
      }
      Response.writeError(request, response, callback, 404, "not in the page manifest");
      return true;
    }
    if (res.delayMs > 0) {
      long micros = (long) (res.delayMs * 1000);
      request
          .getComponents()
          .getScheduler()
          .schedule(() -> write(response, res, callback), micros, TimeUnit.MICROSECONDS);
    } else {
      write(response, res, callback);
    }
    return true;
  }

  private synchronized void logUnserved(String line) {
    try {
      unserved.write((line + "\n").getBytes(StandardCharsets.UTF_8));
      unserved.flush();
    } catch (IOException e) {
      System.err.println("h2lab-jetty: unserved.log: " + e.getMessage());
    }
  }

  /** A recorded response: status, content type, kept headers, then the body in one write. */
  private void write(Response response, Config.Resource res, Callback callback) {
    response.setStatus(res.status);
    HttpFields.Mutable h = response.getHeaders();
    for (List<String> kv : res.headers) {
      h.add(new HttpField(kv.get(0), kv.get(1)));
    }
    byte[] body = bodies.get(res);
    boolean bodiless = res.status < 200 || res.status == 204 || res.status == 304;
    boolean redirect = res.status >= 300 && res.status < 400 && h.contains(HttpHeader.LOCATION);
    if (bodiless || redirect || body == null) {
      h.remove(HttpHeader.CONTENT_TYPE);
      if (!bodiless) {
        h.put(HttpHeader.CONTENT_LENGTH, 0L);
      }
      response.write(true, null, callback);
      return;
    }
    h.put(HttpHeader.CONTENT_TYPE, res.contentType);
    h.put(HttpHeader.CONTENT_LENGTH, body.length);
    response.write(true, ByteBuffer.wrap(body), callback);
  }
}
