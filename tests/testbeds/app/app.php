<?php
/*
 * app.php - the PHP application of the testbeds (php-fpm behind apache's
 * mod_proxy_fcgi or nginx).  GET /app.php?id=ID&n=N[&dns=1]:
 *   - runs N SQL statements (1..5), each with ID in its text, over one
 *     persistent PostgreSQL connection (pg_pconnect: reused across the
 *     requests a php-fpm child serves); the third repeats the first
 *     identically;
 *   - with dns=1 resolves "r-ID.test" through glibc (gethostbyname);
 *   - answers text/plain: "id ID", one line per operation in the order it
 *     ran, then "end ID".  Operations: "sql TEXT" (a statement sent),
 *     "name NAME ADDR" (a lookup), and the work PHP and libpq do by
 *     themselves for this request: "pgconnect HOST" when this child opens
 *     its connection (libpq resolves HOST; not for a unix socket) and
 *     "sql RESET ALL;", which PHP sends whenever pg_pconnect reuses the
 *     connection.  A file per child in TB_STATE remembers that it has one.
 * The load client (tb-client) checks the answer and writes the operations
 * to its truth file.  Environment (pool configuration): TB_PG, the
 * connection string; TB_PG_HOST, its host; TB_STATE, a writable directory.
 */
header('Content-Type: text/plain');
$id = $_GET['id'] ?? '';
$n = intval($_GET['n'] ?? '0');
if (!preg_match('/^[a-z0-9]{1,40}$/', $id) || $n < 0 || $n > 5) {
	http_response_code(400);
	echo "bad request: id must be [a-z0-9]{1,40}, n 0..5\n";
	exit;
}
$sql = [
	"SELECT v FROM tb_kv WHERE k = '%s'",
	"INSERT INTO tb_hits (id, n) VALUES ('%s', 1)",
	"SELECT v FROM tb_kv WHERE k = '%s'",
	"UPDATE tb_hits SET n = n + 1 WHERE id = '%s'",
	"SELECT n FROM tb_hits WHERE id = '%s'",
];
$out = "id $id\n";
if ($n > 0) {
	$mark = getenv('TB_STATE') . '/pg-' . getmypid();
	$reused = file_exists($mark);
	$db = pg_pconnect(getenv('TB_PG'));
	if (!$db) {
		http_response_code(503);
		echo "no database connection\n";
		exit;
	}
	$host = getenv('TB_PG_HOST');
	if ($reused) {
		$out .= "sql RESET ALL;\n";
	} else {
		touch($mark);
		if ($host !== '' && $host[0] !== '/')
			$out .= "pgconnect $host\n";
	}
	for ($i = 0; $i < $n; $i++) {
		$q = sprintf($sql[$i], $id);
		$r = pg_query($db, $q);
		if ($r === false) {
			http_response_code(500);
			echo "query failed: " . pg_last_error($db) . "\n";
			exit;
		}
		$out .= "sql $q\n";
	}
}
if (!empty($_GET['dns'])) {
	$name = "r-$id.test";
	$addr = gethostbyname($name);
	$out .= "name $name $addr\n";
}
echo $out . "end $id\n";
