// TbJava.java - the JDK 17 application of tb-jdk.sh (docs/accuracy.md).
//
//   java TbJava front PORT BACKEND_PORT PIDFILE
//   java TbJava backend PORT PIDFILE
//
// front: com.sun.net.httpserver.HttpServer with a fixed pool of 8 threads;
// GET /py/app?id=ID&n=0 calls the backend GET /b?id=ID through one
// java.net.http.HttpClient (HTTP/1.1, shared by all requests: its own
// selector thread reads the answers) and answers "id ID", "call /b?id=ID",
// "end ID" (tb-client --max-sql 0 --calls 1 checks it).  A backend answer
// that does not name ID is a 502: the application's own ground truth.
// backend: the same server (4 threads); GET /b?id=ID answers
// "id ID\nend ID\n".  Both listen on 127.0.0.1, write PIDFILE once they
// do, and stop cleanly on SIGTERM (exit status 0).
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.regex.Pattern;

public final class TbJava {
    private static final Pattern ID = Pattern.compile("[a-z0-9]{1,40}");

    private static String param(HttpExchange ex, String name) {
        String q = ex.getRequestURI().getRawQuery();
        if (q == null)
            return "";
        for (String kv : q.split("&")) {
            int eq = kv.indexOf('=');
            if (eq > 0 && kv.substring(0, eq).equals(name))
                return kv.substring(eq + 1);
        }
        return "";
    }

    private static void answer(HttpExchange ex, int status, String text)
            throws IOException {
        byte[] body = text.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", "text/plain");
        ex.sendResponseHeaders(status, body.length);
        try (OutputStream os = ex.getResponseBody()) {
            os.write(body);
        }
    }

    private static void serve(HttpServer server, ExecutorService pool,
                              String pidfile) throws IOException {
        server.setExecutor(pool);
        server.start();
        Files.writeString(Path.of(pidfile), ProcessHandle.current().pid() + "\n");
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            server.stop(0);
            pool.shutdownNow();
        }));
    }

    private static void backend(int port, String pidfile) throws IOException {
        HttpServer server = HttpServer.create(
            new InetSocketAddress("127.0.0.1", port), 511);
        server.createContext("/b", ex -> {
            String id = param(ex, "id");
            if (!ID.matcher(id).matches())
                answer(ex, 400, "bad request\n");
            else
                answer(ex, 200, "id " + id + "\nend " + id + "\n");
        });
        serve(server, Executors.newFixedThreadPool(4), pidfile);
    }

    private static void front(int port, int bport, String pidfile)
            throws IOException {
        HttpClient client = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(30)).build();
        HttpServer server = HttpServer.create(
            new InetSocketAddress("127.0.0.1", port), 511);
        server.createContext("/py/app", ex -> {
            String id = param(ex, "id");
            if (!ID.matcher(id).matches() || !param(ex, "n").equals("0")) {
                answer(ex, 400, "bad request: id [a-z0-9], n 0\n");
                return;
            }
            String path = "/b?id=" + id;
            try {
                HttpResponse<String> r = client.send(
                    HttpRequest.newBuilder(URI.create(
                        "http://127.0.0.1:" + bport + path))
                        .timeout(Duration.ofSeconds(60)).GET().build(),
                    HttpResponse.BodyHandlers.ofString());
                String want = "id " + id + "\nend " + id + "\n";
                if (r.statusCode() != 200 || !r.body().equals(want)) {
                    answer(ex, 502, "backend answered " + r.statusCode()
                           + "\n");
                    return;
                }
            } catch (InterruptedException e) {
                answer(ex, 500, "interrupted\n");
                return;
            }
            answer(ex, 200, "id " + id + "\ncall " + path + "\nend " + id
                   + "\n");
        });
        serve(server, Executors.newFixedThreadPool(8), pidfile);
    }

    public static void main(String[] args) throws IOException {
        if (args.length == 4 && args[0].equals("front"))
            front(Integer.parseInt(args[1]), Integer.parseInt(args[2]),
                  args[3]);
        else if (args.length == 3 && args[0].equals("backend"))
            backend(Integer.parseInt(args[1]), args[2]);
        else {
            System.err.println("usage: TbJava front PORT BACKEND_PORT PIDFILE"
                               + " | backend PORT PIDFILE");
            System.exit(2);
        }
    }
}
