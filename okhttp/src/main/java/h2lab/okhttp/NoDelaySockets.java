package h2lab.okhttp;

import java.io.IOException;
import java.net.InetAddress;
import java.net.Socket;
import javax.net.SocketFactory;

/**
 * The platform's sockets with TCP_NODELAY set (Nagle's algorithm off). OkHttp 5.5.1 never sets
 * it, so by default its connections keep Nagle on: this is the plan's {@code tcp_nodelay}
 * option, to measure what that costs.
 */
final class NoDelaySockets extends SocketFactory {
  private final SocketFactory inner = SocketFactory.getDefault();

  private static Socket noDelay(Socket s) throws IOException {
    s.setTcpNoDelay(true);
    return s;
  }

  @Override
  public Socket createSocket() throws IOException {
    return noDelay(inner.createSocket());
  }

  @Override
  public Socket createSocket(String host, int port) throws IOException {
    return noDelay(inner.createSocket(host, port));
  }

  @Override
  public Socket createSocket(String host, int port, InetAddress localHost, int localPort)
      throws IOException {
    return noDelay(inner.createSocket(host, port, localHost, localPort));
  }

  @Override
  public Socket createSocket(InetAddress host, int port) throws IOException {
    return noDelay(inner.createSocket(host, port));
  }

  @Override
  public Socket createSocket(InetAddress address, int port, InetAddress localAddress, int localPort)
      throws IOException {
    return noDelay(inner.createSocket(address, port, localAddress, localPort));
  }
}
