package h2lab.okhttp;

import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.util.Enumeration;
import java.util.List;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;

/**
 * Loads (without initialising) every class of OkHttp and Okio from this jar before the trial's
 * clock starts. Left to the first response, loading them from the jar took the first calls
 * tens of ms on 5 threads at once: JVM start-up, not page load. Nothing runs: no static
 * initialiser, no connection.
 */
final class Preload {
  private static final List<String> PACKAGES = List.of("okhttp3/", "okio/");

  private Preload() {}

  /** How many classes were loaded (0 when not run from a jar). */
  static int classes() {
    Path jar;
    try {
      jar = Path.of(Preload.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    } catch (URISyntaxException | SecurityException e) {
      return 0;
    }
    if (!jar.toString().endsWith(".jar")) {
      return 0;
    }
    ClassLoader loader = Preload.class.getClassLoader();
    int n = 0;
    try (JarFile file = new JarFile(jar.toFile())) {
      for (Enumeration<JarEntry> e = file.entries(); e.hasMoreElements(); ) {
        String name = e.nextElement().getName();
        if (name.endsWith(".class") && PACKAGES.stream().anyMatch(name::startsWith)) {
          n += load(name.substring(0, name.length() - ".class".length()).replace('/', '.'), loader);
        }
      }
    } catch (IOException e) {
      return n;
    }
    return n;
  }

  private static int load(String name, ClassLoader loader) {
    try {
      Class.forName(name, false, loader);
      return 1;
    } catch (ClassNotFoundException | LinkageError e) {
      return 0; // a platform class for Android or Conscrypt: never used here
    }
  }
}
