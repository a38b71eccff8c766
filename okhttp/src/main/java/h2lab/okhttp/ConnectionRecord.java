package h2lab.okhttp;

import java.util.HashSet;
import java.util.Set;

/** One connection the trial's calls used: the first call that acquired it names its route. */
final class ConnectionRecord {
  final int id;
  final String host;
  final String address;

  /** OkHttp's name for the negotiated protocol: http/1.1, h2, h2_prior_knowledge */
  final String protocol;

  /** when a call acquired it first, ms from the clock start */
  final double firstAcquiredMs;

  /** how many calls acquired it (OkHttp may report one acquisition twice: counted once) */
  int calls;

  private final transient Set<Integer> callIndices = new HashSet<>();

  ConnectionRecord(int id, String host, String address, String protocol, double firstAcquiredMs) {
    this.id = id;
    this.host = host;
    this.address = address;
    this.protocol = protocol;
    this.firstAcquiredMs = firstAcquiredMs;
  }

  /** Counts the call with plan index {@code index} as one of its users. */
  void acquiredBy(int index) {
    callIndices.add(index);
    calls = callIndices.size();
  }
}
