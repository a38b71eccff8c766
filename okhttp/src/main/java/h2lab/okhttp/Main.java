package h2lab.okhttp;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.GeneralSecurityException;
import java.util.Properties;

/**
 * h2lab's OkHttp page client. {@code java -jar h2lab-okhttp.jar PLAN.json RESULT.json} loads
 * the page the plan lists and writes what happened; {@code -version} prints the versions.
 *
 * <p>Exit codes: 0 the result is written (failed requests are in it); 2 the plan or the
 * arguments are wrong; 1 anything else (on stderr).
 */
public final class Main {
  private Main() {}

  public static void main(String[] args) {
    int code;
    try {
      code = run(args);
    } catch (IllegalArgumentException e) {
      System.err.println("h2lab-okhttp: " + e.getMessage());
      code = 2;
    } catch (IOException | GeneralSecurityException | InterruptedException e) {
      System.err.println("h2lab-okhttp: " + Fetch.describe(e));
      code = 1;
    }
    // OkHttp's dispatcher threads idle for a minute before they end: do not wait for them
    System.exit(code);
  }

  private static int run(String[] args)
      throws IOException, GeneralSecurityException, InterruptedException {
    if (args.length == 1 && args[0].equals("-version")) {
      System.out.println(version());
      return 0;
    }
    if (args.length != 2) {
      throw new IllegalArgumentException("usage: h2lab-okhttp PLAN.json RESULT.json | -version");
    }
    Plan plan = Plan.read(Path.of(args[0]));
    Result result = new Trial(plan).run();
    Path out = Path.of(args[1]);
    Path tmp = out.resolveSibling(out.getFileName() + ".tmp");
    Files.writeString(tmp, Plan.JSON.toJson(result) + "\n", StandardCharsets.UTF_8);
    Files.move(tmp, out, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    return 0;
  }

  /** {@code h2lab-okhttp <source hash> okhttp 5.5.1 java 17.0.15}. */
  static String version() throws IOException {
    Properties p = new Properties();
    try (InputStream in = Main.class.getResourceAsStream("/h2lab-okhttp.properties")) {
      if (in != null) {
        p.load(in);
      }
    }
    return String.format(
        "h2lab-okhttp %s okhttp %s java %s",
        p.getProperty("source_hash", "unknown"),
        okhttp3.OkHttp.VERSION,
        System.getProperty("java.version"));
  }
}
