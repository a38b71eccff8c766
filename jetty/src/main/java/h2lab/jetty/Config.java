package h2lab.jetty;

import com.google.gson.annotations.SerializedName;
import java.util.List;

/**
 * jetty.json, as src/h2lab/servers/jetty.py renders it: the origins to listen on (address,
 * certificate chain and key, PEM), the ports, TLS and timeouts, and the page's resources with
 * their lookup keys already made (host in lower case, path decoded, query as recorded).
 */
final class Config {
  static final class Origin {
    String host;
    String ip;
    String cert;
    String key;
  }

  static final class Ports {
    int h1c;
    int tls;
    int h2c;
    int h3;
  }

  static final class Resource {
    String method;
    String host;
    String target;
    String path;
    String query;
    int status;
    @SerializedName("content_type")
    String contentType;
    List<List<String>> headers;
    String body;
    @SerializedName("delay_ms")
    double delayMs;
  }

  List<Origin> origins;
  Ports ports;
  @SerializedName("tls_version")
  String tlsVersion;
  boolean resumption;
  @SerializedName("state_dir")
  String stateDir;
  @SerializedName("unserved_log")
  String unservedLog;
  @SerializedName("idle_timeout_s")
  int idleTimeoutS;
  @SerializedName("max_streams")
  int maxStreams;
  List<Resource> resources;
}
