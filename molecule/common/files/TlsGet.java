// Fetch a URL with Java's default TLS settings (truststore: the JDK's cacerts, which Debian
// links to /etc/ssl/certs/java/cacerts) and print the body. Run as `java TlsGet.java URL`.
import java.io.InputStream;
import java.net.URL;
import java.nio.charset.StandardCharsets;

public class TlsGet {
    public static void main(String[] args) throws Exception {
        try (InputStream in = new URL(args[0]).openStream()) {
            System.out.print(new String(in.readAllBytes(), StandardCharsets.UTF_8));
        }
    }
}
