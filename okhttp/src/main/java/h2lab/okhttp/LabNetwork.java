package h2lab.okhttp;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509TrustManager;
import okhttp3.Dns;

/**
 * What the client may reach and trust inside the lab: names only from the plan's host map (no
 * system resolver), certificates only from the lab CA (hostname verification stays OkHttp's).
 */
final class LabNetwork {
  private static final Pattern IP_LITERAL = Pattern.compile("[0-9.]+|[0-9a-fA-F:]*:[0-9a-fA-F:.]*");

  private LabNetwork() {}

  /** A {@link Dns} that answers from {@code hosts} (hostname -> IP literal) and nothing else. */
  static Dns dns(Map<String, String> hosts) throws UnknownHostException {
    Map<String, InetAddress> table = new HashMap<>();
    for (Map.Entry<String, String> e : hosts.entrySet()) {
      String ip = e.getValue();
      if (!IP_LITERAL.matcher(ip).matches()) {
        throw new IllegalArgumentException("hosts: " + e.getKey() + ": not an IP address: " + ip);
      }
      // a literal: getByName parses it, no lookup
      InetAddress parsed = InetAddress.getByName(ip);
      table.put(e.getKey().toLowerCase(), InetAddress.getByAddress(e.getKey(), parsed.getAddress()));
    }
    return host -> {
      InetAddress a = table.get(host.toLowerCase());
      if (a == null) {
        throw new UnknownHostException(host + " is not one of the lab's origins " + table.keySet());
      }
      return List.of(a);
    };
  }

  /** A trust manager that trusts the certificates in {@code pem} (the lab CA) and no other. */
  static X509TrustManager trustOnly(Path pem) throws IOException, GeneralSecurityException {
    Collection<? extends Certificate> certs;
    try (InputStream in = Files.newInputStream(pem)) {
      certs = CertificateFactory.getInstance("X.509").generateCertificates(in);
    }
    if (certs.isEmpty()) {
      throw new IllegalArgumentException("ca_pem: no certificate in " + pem);
    }
    KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
    store.load(null, null);
    int i = 0;
    for (Certificate c : certs) {
      store.setCertificateEntry("h2lab-ca-" + i++, c);
    }
    TrustManagerFactory tmf =
        TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    tmf.init(store);
    for (TrustManager tm : tmf.getTrustManagers()) {
      if (tm instanceof X509TrustManager x509) {
        return x509;
      }
    }
    throw new GeneralSecurityException("no X509TrustManager from " + tmf.getAlgorithm());
  }

  /** A TLS context whose only trust manager is {@code trust}. */
  static SSLContext tls(X509TrustManager trust) throws GeneralSecurityException {
    SSLContext ctx = SSLContext.getInstance("TLS");
    ctx.init(null, new TrustManager[] {trust}, null);
    return ctx;
  }
}
