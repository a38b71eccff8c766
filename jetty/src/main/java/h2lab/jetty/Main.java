package h2lab.jetty;

import com.google.gson.Gson;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.Base64;
import java.util.Properties;
import org.eclipse.jetty.alpn.server.ALPNServerConnectionFactory;
import org.eclipse.jetty.http.UriCompliance;
import org.eclipse.jetty.http2.server.HTTP2CServerConnectionFactory;
import org.eclipse.jetty.http2.server.HTTP2ServerConnectionFactory;
import org.eclipse.jetty.http3.server.HTTP3ServerConnectionFactory;
import org.eclipse.jetty.io.ssl.SslHandshakeListener;
import org.eclipse.jetty.quic.server.QuicServerConnector;
import org.eclipse.jetty.quic.server.ServerQuicConfiguration;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.SecureRequestCustomizer;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.SslConnectionFactory;
import org.eclipse.jetty.util.Jetty;
import org.eclipse.jetty.util.ssl.SslContextFactory;

/**
 * h2lab's Jetty server level: {@code java -jar h2lab-jetty.jar -config jetty.json} serves a page
 * on every origin address (h1c :80, h1s/h2s :443 by ALPN, h2c :8080, h3 on UDP :443) and prints
 * {@link #READY} once every connector is bound; {@code -version} prints what it is built of.
 */
public final class Main {
  static final String READY = "h2lab-jetty ready";
  /** The keystores Main writes for Jetty (QUIC reads its certificate from one, as a file). */
  private static final String STORE_PASSWORD = "h2lab";
  /** Past JSSE's longest ticket lifetime (7 days): no TLS 1.3 ticket is sent. */
  private static final int NO_TICKET_TIMEOUT_S = 7 * 24 * 3600 + 1;

  private Main() {}

  public static void main(String[] args) throws Exception {
    if (args.length == 1 && args[0].equals("-version")) {
      Properties p = new Properties();
      try (InputStream in = Main.class.getResourceAsStream("/h2lab-jetty.properties")) {
        p.load(in);
      }
      System.out.printf(
          "h2lab-jetty %s jetty %s quiche %s java %s%n",
          p.getProperty("source_hash"),
          Jetty.VERSION,
          p.getProperty("quiche_version"),
          System.getProperty("java.version"));
      return;
    }
    if (args.length != 2 || !args[0].equals("-config")) {
      System.err.println("usage: h2lab-jetty -config jetty.json | -version");
      System.exit(2);
    }
    String json = Files.readString(Path.of(args[1]), StandardCharsets.UTF_8);
    Config config = new Gson().fromJson(json, Config.class);
    Server server = new Server();
    server.setHandler(new Replay(config));
    for (Config.Origin o : config.origins) {
      addConnectors(server, config, o);
    }
    server.setStopAtShutdown(true);
    server.start();
    System.out.println(READY);
    System.out.flush();
    server.join();
  }

  private static HttpConfiguration httpConfiguration() {
    HttpConfiguration http = new HttpConfiguration();
    http.setSendServerVersion(false);
    http.setSendXPoweredBy(false);
    // any request target the browser sends reaches the lookup, as at the other servers
    // (Jetty's default refuses ambiguous paths such as %2F with 400)
    http.setUriCompliance(UriCompliance.UNSAFE);
    SecureRequestCustomizer secure = new SecureRequestCustomizer();
    // a client of an IP literal sends no SNI, and every origin has its own address anyway
    secure.setSniHostCheck(false);
    secure.setSniRequired(false);
    http.addCustomizer(secure);
    return http;
  }

  private static void addConnectors(Server server, Config config, Config.Origin o)
      throws IOException, GeneralSecurityException {
    long idleMs = config.idleTimeoutS * 1000L;
    HttpConfiguration http = httpConfiguration();
    HttpConnectionFactory h1 = new HttpConnectionFactory(http);
    HTTP2ServerConnectionFactory h2 = new HTTP2ServerConnectionFactory(http);
    h2.setMaxConcurrentStreams(config.maxStreams);
    ALPNServerConnectionFactory alpn = new ALPNServerConnectionFactory("h2", "http/1.1");
    alpn.setDefaultProtocol(h1.getProtocol());
    Path store = writeKeyStore(config, o);
    SslContextFactory.Server tcpTls = sslContext(store);
    // the trial's one TLS version over TCP (ServeContext.tls_version)
    tcpTls.setIncludeProtocols("TLSv" + config.tlsVersion);
    SslConnectionFactory tls = new SslConnectionFactory(tcpTls, alpn.getProtocol());
    if (!config.resumption) {
      noResumption(tcpTls, tls);
    }
    ServerConnector tcp = new ServerConnector(server, tls, alpn, h2, h1);
    listen(tcp, o.ip, config.ports.tls, idleMs);
    server.addConnector(tcp);
    for (int port : new int[] {config.ports.h1c, config.ports.h2c}) {
      // HTTP/1.1 and h2c with prior knowledge on both, as H2O's and Caddy's :80
      HTTP2CServerConnectionFactory h2c = new HTTP2CServerConnectionFactory(http);
      h2c.setMaxConcurrentStreams(config.maxStreams);
      ServerConnector clear = new ServerConnector(server, new HttpConnectionFactory(http), h2c);
      listen(clear, o.ip, port, idleMs);
      server.addConnector(clear);
    }
    // QUIC is TLS 1.3 whatever the TCP version (RFC 9001); quiche reads the key and chain as
    // PEM files that Jetty exports from the keystore into this folder
    Path pem = Path.of(config.stateDir, "quic-pem", o.host);
    Files.createDirectories(pem);
    ServerQuicConfiguration quic = new ServerQuicConfiguration(sslContext(store), pem);
    quic.setMaxBidirectionalRemoteStreams(config.maxStreams);
    // its own HttpConfiguration: Jetty's HTTP/3 factory adds an Alt-Svc customizer to the one
    // it is given, which would announce h3 in every h1s/h2s response (a browser would switch)
    HTTP3ServerConnectionFactory h3factory =
        new HTTP3ServerConnectionFactory(quic, httpConfiguration());
    QuicServerConnector h3 = new QuicServerConnector(server, quic, h3factory);
    listen(h3, o.ip, config.ports.h3, idleMs);
    server.addConnector(h3);
  }

  /**
   * A first view's TLS over TCP carries no resumption (ServeContext.resumption): JSSE sends no
   * TLS 1.3 ticket when the session timeout is past a ticket's 7-day lifetime, and a session
   * invalidated at the end of its handshake is not resumed by its TLS 1.2 session ID.
   */
  private static void noResumption(SslContextFactory.Server ssl, SslConnectionFactory tls) {
    ssl.setSslSessionTimeout(NO_TICKET_TIMEOUT_S);
    tls.addBean(
        new SslHandshakeListener() {
          @Override
          public void handshakeSucceeded(SslHandshakeListener.Event event) {
            event.getSSLEngine().getSession().invalidate();
          }
        });
  }

  private static void listen(
      org.eclipse.jetty.server.AbstractNetworkConnector c, String ip, int port, long idleMs) {
    c.setHost(ip);
    c.setPort(port);
    c.setIdleTimeout(idleMs);
  }

  private static SslContextFactory.Server sslContext(Path store) {
    SslContextFactory.Server ssl = new SslContextFactory.Server();
    ssl.setKeyStorePath(store.toString());
    ssl.setKeyStoreType("PKCS12");
    ssl.setKeyStorePassword(STORE_PASSWORD);
    ssl.setCertAlias("origin");
    ssl.setSniRequired(false);
    return ssl;
  }

  /** The origin's PEM chain and PKCS#8 key (h2lab.tls.LocalCA) as a PKCS#12 keystore file. */
  private static Path writeKeyStore(Config config, Config.Origin o)
      throws IOException, GeneralSecurityException {
    CertificateFactory x509 = CertificateFactory.getInstance("X.509");
    Certificate[] chain;
    try (InputStream in = Files.newInputStream(Path.of(o.cert))) {
      chain = x509.generateCertificates(in).toArray(new Certificate[0]);
    }
    String pem = Files.readString(Path.of(o.key), StandardCharsets.US_ASCII);
    String b64 = pem.replaceAll("-----[A-Z ]+-----", "").replaceAll("\\s", "");
    PKCS8EncodedKeySpec spec = new PKCS8EncodedKeySpec(Base64.getDecoder().decode(b64));
    String algorithm = chain[0].getPublicKey().getAlgorithm();
    PrivateKey key = KeyFactory.getInstance(algorithm).generatePrivate(spec);
    KeyStore ks = KeyStore.getInstance("PKCS12");
    ks.load(null, null);
    ks.setKeyEntry("origin", key, STORE_PASSWORD.toCharArray(), chain);
    Path dir = Path.of(config.stateDir, "keystores");
    Files.createDirectories(dir);
    Path file = dir.resolve(o.host + ".p12");
    try (OutputStream out = Files.newOutputStream(file)) {
      ks.store(out, STORE_PASSWORD.toCharArray());
    }
    return file;
  }
}
