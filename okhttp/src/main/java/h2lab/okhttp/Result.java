package h2lab.okhttp;

import java.util.List;

/** The JSON the program writes: one trial's calls, connections and totals (snake_case). */
final class Result {
  final String client = "h2lab-okhttp";
  final String okhttp = okhttp3.OkHttp.VERSION;
  final String protocol;
  final int maxRequestsPerHost;
  final int maxRequests;
  final boolean tcpNodelay;

  /** JVM start to the trial clock's start (not part of any measured time) */
  final double startupMs;

  /** clock start to every call done (or the trial given up) */
  final double totalMs;

  /** the trial's bound ran out: the calls still running were cancelled */
  final boolean timedOut;

  /** TCP connections the calls started, and those that failed */
  final int connectsStarted;

  final int connectsFailed;
  final List<CallRecord> requests;
  final List<ConnectionRecord> connections;

  Result(
      Plan plan,
      double startupMs,
      double totalMs,
      boolean timedOut,
      Recorder recorder,
      List<CallRecord> requests) {
    this.protocol = plan.protocol;
    this.maxRequestsPerHost = plan.maxRequestsPerHost;
    this.maxRequests = plan.maxRequests;
    this.tcpNodelay = plan.tcpNodelay;
    this.startupMs = startupMs;
    this.totalMs = totalMs;
    this.timedOut = timedOut;
    this.connectsStarted = recorder.connectsStarted();
    this.connectsFailed = recorder.connectsFailed();
    this.requests = requests;
    this.connections = recorder.connections();
  }
}
