package h2lab.okhttp;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Proxy;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import okhttp3.Call;
import okhttp3.Connection;
import okhttp3.Dispatcher;
import okhttp3.EventListener;
import okhttp3.Protocol;

/**
 * The trial's {@link EventListener}: the times of each call's events into its {@link
 * CallRecord} (found by the request's {@code Integer} tag, its index in the plan), and every
 * connection the calls acquired, numbered by identity in the order they were first acquired.
 */
final class Recorder extends EventListener {
  private final Clock clock;
  private final List<CallRecord> calls;
  private final Map<Connection, ConnectionRecord> connections = new IdentityHashMap<>();
  private final AtomicInteger connectsStarted = new AtomicInteger();
  private final AtomicInteger connectsFailed = new AtomicInteger();

  Recorder(Clock clock, List<CallRecord> calls) {
    this.clock = clock;
    this.calls = calls;
  }

  /** Every connection acquired, in id order. */
  synchronized List<ConnectionRecord> connections() {
    List<ConnectionRecord> out = new ArrayList<>(connections.values());
    out.sort((a, b) -> Integer.compare(a.id, b.id));
    return out;
  }

  /** TCP connections the calls started (OkHttp may race several for one h2 origin). */
  int connectsStarted() {
    return connectsStarted.get();
  }

  int connectsFailed() {
    return connectsFailed.get();
  }

  private CallRecord of(Call call) {
    Integer index = call.request().tag(Integer.class);
    return calls.get(index);
  }

  @Override
  public void callStart(Call call) {
    of(call).queuedMs = clock.ms();
  }

  @Override
  public void dispatcherQueueEnd(Call call, Dispatcher dispatcher) {
    of(call).dispatchedMs = clock.ms();
  }

  @Override
  public void connectStart(Call call, InetSocketAddress address, Proxy proxy) {
    connectsStarted.incrementAndGet();
    CallRecord r = of(call);
    if (r.connectStartMs == null) {
      r.connectStartMs = clock.ms();
    }
  }

  @Override
  public void connectEnd(Call call, InetSocketAddress address, Proxy proxy, Protocol protocol) {
    of(call).connectEndMs = clock.ms();
  }

  @Override
  public void connectFailed(
      Call call, InetSocketAddress address, Proxy proxy, Protocol protocol, IOException e) {
    connectsFailed.incrementAndGet();
  }

  @Override
  public void connectionAcquired(Call call, Connection connection) {
    double now = clock.ms();
    ConnectionRecord c;
    synchronized (this) {
      c = connections.get(connection);
      if (c == null) {
        InetSocketAddress to = connection.route().socketAddress();
        c =
            new ConnectionRecord(
                connections.size(),
                call.request().url().host(),
                to.getAddress().getHostAddress() + ":" + to.getPort(),
                connection.protocol().toString(),
                now);
        connections.put(connection, c);
      }
    }
    CallRecord r = of(call);
    synchronized (this) {
      c.acquiredBy(r.index);
    }
    r.connection = c.id;
    r.protocol = c.protocol;
  }

  @Override
  public void requestHeadersStart(Call call) {
    of(call).requestMs = clock.ms();
  }

  @Override
  public void responseHeadersStart(Call call) {
    CallRecord r = of(call);
    if (r.ttfbMs == null) {
      r.ttfbMs = clock.ms();
    }
  }

  @Override
  public void responseBodyEnd(Call call, long byteCount) {
    of(call).endMs = clock.ms();
  }
}
