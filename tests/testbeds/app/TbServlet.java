// TbServlet.java - the Tomcat 10 application of tb-tomcat.sh
// (docs/accuracy.md).
//
// GET /py/app?id=ID&n=N runs N SQL statements (1..3, ID in each, the
// third repeating the first) through PostgreSQL JDBC (Statement.execute:
// the extended query protocol, autocommit) on a connection taken from a
// pool of tb.pool (default 4) connections opened in init() and shared by
// every request (a request waits for a free one), and answers "id ID",
// "sql TEXT" per statement, "end ID" (tb-client --max-sql 3 checks it).
// The JDBC URL comes from the system property tb.pg.url.  Compiled at
// test time against Tomcat's servlet API.
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.regex.Pattern;

public final class TbServlet extends HttpServlet {
    private static final Pattern ID = Pattern.compile("[a-z0-9]{1,40}");
    private static final String[] SQL = {
        "SELECT v FROM tb_kv WHERE k = '%s'",
        "INSERT INTO tb_hits (id, n) VALUES ('%s', 1)",
        "SELECT v FROM tb_kv WHERE k = '%s'",
    };
    private BlockingQueue<Connection> pool;

    @Override
    public void init() throws ServletException {
        int size = Integer.getInteger("tb.pool", 4);
        pool = new ArrayBlockingQueue<>(size);
        try {
            for (int i = 0; i < size; i++) {
                Connection c = DriverManager.getConnection(
                    System.getProperty("tb.pg.url"));
                c.setAutoCommit(true);
                pool.add(c);
            }
        } catch (SQLException e) {
            throw new ServletException("cannot open the pool", e);
        }
    }

    @Override
    public void destroy() {
        for (Connection c : pool) {
            try {
                c.close();
            } catch (SQLException e) {
                // stopping anyway
            }
        }
    }

    private static void answer(HttpServletResponse resp, int status,
                               String text) throws IOException {
        byte[] body = text.getBytes(StandardCharsets.UTF_8);
        resp.setStatus(status);
        resp.setContentType("text/plain");
        resp.setContentLength(body.length);
        try (OutputStream os = resp.getOutputStream()) {
            os.write(body);
        }
    }

    @Override
    protected void doGet(HttpServletRequest req, HttpServletResponse resp)
            throws IOException {
        String id = req.getParameter("id");
        int n;
        try {
            n = Integer.parseInt(req.getParameter("n"));
        } catch (NumberFormatException e) {
            n = -1;
        }
        if (id == null || !ID.matcher(id).matches() || n < 0 || n > 3) {
            answer(resp, 400, "bad request: id [a-z0-9], n 0..3\n");
            return;
        }
        StringBuilder out = new StringBuilder("id " + id + "\n");
        if (n > 0) {
            Connection c;
            try {
                c = pool.take();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                answer(resp, 503, "interrupted\n");
                return;
            }
            try (Statement st = c.createStatement()) {
                for (int i = 0; i < n; i++) {
                    String stmt = String.format(SQL[i], id);
                    if (st.execute(stmt)) {
                        try (ResultSet rs = st.getResultSet()) {
                            while (rs.next()) {
                                // read every row
                            }
                        }
                    }
                    out.append("sql ").append(stmt).append('\n');
                }
            } catch (SQLException e) {
                answer(resp, 500, "sql failed: " + e.getMessage() + "\n");
                return;
            } finally {
                pool.add(c);
            }
        }
        out.append("end ").append(id).append('\n');
        answer(resp, 200, out.toString());
    }
}
