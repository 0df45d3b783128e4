// Interop writes and reads Guava Bloom filters for guava's tests (see
// guava/java_test.go). Usage:
//
//   java -cp guava.jar:DIR Interop KEYS N P JAVA_OUT GO_IN ANSWERS
//
// KEYS is a UTF-8 file, one key a line. The first N keys are put, with
// Funnels.stringFunnel(UTF_8), into BloomFilter.create(funnel, N, P), which
// is written to JAVA_OUT with writeTo. GO_IN, a filter written by the Go
// package, is read twice: with Funnels.byteArrayFunnel() and with
// Funnels.stringFunnel(UTF_8). ANSWERS gets three lines of '0'/'1', one
// character per key: mightContain of the Java filter, of GO_IN as bytes and
// of GO_IN as strings.
import com.google.common.hash.BloomFilter;
import com.google.common.hash.Funnels;
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.util.List;

public class Interop {
  public static void main(String[] a) throws IOException {
    List<String> keys = Files.readAllLines(Paths.get(a[0]), StandardCharsets.UTF_8);
    int n = Integer.parseInt(a[1]);
    double p = Double.parseDouble(a[2]);
    BloomFilter<CharSequence> own = BloomFilter.create(Funnels.stringFunnel(StandardCharsets.UTF_8), n, p);
    for (int i = 0; i < n; i++) own.put(keys.get(i));
    try (OutputStream out = new BufferedOutputStream(new FileOutputStream(a[3]))) {
      own.writeTo(out);
    }
    BloomFilter<byte[]> goBytes;
    BloomFilter<CharSequence> goStrings;
    try (InputStream in = new BufferedInputStream(new FileInputStream(a[4]))) {
      goBytes = BloomFilter.readFrom(in, Funnels.byteArrayFunnel());
    }
    try (InputStream in = new BufferedInputStream(new FileInputStream(a[4]))) {
      goStrings = BloomFilter.readFrom(in, Funnels.stringFunnel(StandardCharsets.UTF_8));
    }
    StringBuilder s1 = new StringBuilder(), s2 = new StringBuilder(), s3 = new StringBuilder();
    for (String k : keys) {
      s1.append(own.mightContain(k) ? '1' : '0');
      s2.append(goBytes.mightContain(k.getBytes(StandardCharsets.UTF_8)) ? '1' : '0');
      s3.append(goStrings.mightContain(k) ? '1' : '0');
    }
    Files.write(Paths.get(a[5]), (s1 + "\n" + s2 + "\n" + s3 + "\n").getBytes(StandardCharsets.US_ASCII));
  }
}
