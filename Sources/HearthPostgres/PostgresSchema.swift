import HearthStorage

/// The tables and functions of Hearth's shared storage (docs/decisions/0010-scale-out.md), created by
/// every node at start: idempotent, and under a transaction-scoped advisory lock, since several nodes
/// may start at once and concurrent `CREATE OR REPLACE FUNCTION`s fail.
enum PostgresSchema {
    /// `pg_advisory_xact_lock` key for schema changes ("hearth" in ASCII).
    static let lockKey: Int64 = 0x6865_6172_7468

    /// The SQLSTATE `hearth_commit` raises when the lease moved on (class `HF`: Hearth, fenced).
    static let fencedState = "HF001"
    /// The SQLSTATE `hearth_commit` raises when the owner's commit comes after entries it has not applied.
    static let behindState = "HF002"

    /// Log entries kept whatever their age, per database.
    static let keptLogEntries = 10_000
    /// Log entries older than this (and beyond ``keptLogEntries``) are trimmed.
    static let logRetentionMinutes = 5
    /// The trim runs inside every commit whose sequence number is a multiple of this: cheap, and the
    /// log never grows beyond kept + this many entries past its retention.
    static let trimEvery = 1_000

    /// The NOTIFY channel of commit wake-ups (`db:seq`).
    static let channel = "hearth_commits"

    static let statements: [String] = [
        """
        CREATE TABLE IF NOT EXISTS hearth_databases (
            db text PRIMARY KEY,
            owner text,
            epoch bigint NOT NULL DEFAULT 0,
            last_seq bigint NOT NULL DEFAULT 0,
            rules text,
            created_at timestamptz NOT NULL DEFAULT now()
        )
        """,
        """
        CREATE TABLE IF NOT EXISTS hearth_rows (
            db text NOT NULL,
            path text COLLATE "C" NOT NULL,
            value text NOT NULL,
            PRIMARY KEY (db, path)
        )
        """,
        """
        CREATE TABLE IF NOT EXISTS hearth_log (
            db text NOT NULL,
            seq bigint NOT NULL,
            payload text NOT NULL,
            committed_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (db, seq)
        )
        """,
        """
        CREATE TABLE IF NOT EXISTS hearth_rules_history (
            db text NOT NULL,
            version bigserial,
            source text NOT NULL,
            time bigint NOT NULL,
            PRIMARY KEY (db, version)
        )
        """,
        """
        CREATE TABLE IF NOT EXISTS hearth_settings (
            name text PRIMARY KEY,
            value text NOT NULL
        )
        """,
        """
        CREATE TABLE IF NOT EXISTS hearth_members (
            name text PRIMARY KEY,
            address text,
            session_pid int,
            heartbeat_at timestamptz,
            started_at timestamptz NOT NULL DEFAULT now()
        )
        """,
        """
        CREATE TABLE IF NOT EXISTS hearth_on_disconnect (
            node text NOT NULL,
            connection text NOT NULL,
            db text NOT NULL,
            id bigint NOT NULL,
            request text NOT NULL,
            PRIMARY KEY (node, connection, db, id)
        )
        """,
        // One group commit in one statement. Row operations come as parallel arrays (see RowOperations):
        // 'd' deletes the key, 'r' the keys in [key, value), 'u' upserts (key, value), 'i' inserts a row
        // known to be absent. They apply in order, but set-based: consecutive deletes commute, so each run
        // of deletes is two statements, and each run of inserts or upserts one INSERT over unnest (its keys
        // are distinct: the caller folds repeats).
        """
        CREATE OR REPLACE FUNCTION hearth_commit(
            p_db text, p_owner text, p_epoch bigint, p_after bigint,
            p_kinds text[], p_keys text[], p_values text[], p_payload text
        ) RETURNS bigint LANGUAGE plpgsql AS $fn$
        DECLARE
            v_seq bigint;
            g record;
        BEGIN
            IF p_owner IS NULL THEN
                -- Unfenced (imports, tools, rules): whoever owns the database, in log order.
                INSERT INTO hearth_databases (db) VALUES (p_db) ON CONFLICT (db) DO NOTHING;
                UPDATE hearth_databases SET last_seq = last_seq + 1 WHERE db = p_db RETURNING last_seq INTO v_seq;
            ELSE
                -- Fenced by the lease, and (p_after) by the log's last entry: an owner whose commit would
                -- follow entries it has not applied (another node's rules change, an import) checked its
                -- writes against a stale tree or stale rules.
                UPDATE hearth_databases SET last_seq = last_seq + 1
                    WHERE db = p_db AND owner = p_owner AND epoch = p_epoch AND (p_after IS NULL OR last_seq = p_after)
                    RETURNING last_seq INTO v_seq;
                IF v_seq IS NULL THEN
                    IF p_after IS NOT NULL AND EXISTS (
                        SELECT 1 FROM hearth_databases WHERE db = p_db AND owner = p_owner AND epoch = p_epoch
                    ) THEN
                        RAISE EXCEPTION 'the log has entries this node has not applied' USING ERRCODE = '\(behindState)';
                    END IF;
                    RAISE EXCEPTION 'the lease of this database moved to another node' USING ERRCODE = '\(fencedState)';
                END IF;
            END IF;
            IF coalesce(array_length(p_kinds, 1), 0) > 0 THEN
                FOR g IN
                    SELECT s.class, min(s.ord)::int AS lo, max(s.ord)::int AS hi
                    FROM (
                        SELECT t.ord, c.class,
                               t.ord - row_number() OVER (PARTITION BY c.class ORDER BY t.ord) AS run
                        FROM unnest(p_kinds) WITH ORDINALITY AS t(kind, ord),
                             LATERAL (SELECT CASE WHEN t.kind IN ('d', 'r') THEN 'd' ELSE t.kind END AS class) AS c
                    ) s
                    GROUP BY s.class, s.run
                    ORDER BY lo
                LOOP
                    IF g.class = 'i' THEN
                        INSERT INTO hearth_rows (db, path, value)
                            SELECT p_db, t.k, t.v FROM unnest(p_keys[g.lo:g.hi], p_values[g.lo:g.hi]) AS t(k, v);
                    ELSIF g.class = 'u' THEN
                        INSERT INTO hearth_rows (db, path, value)
                            SELECT p_db, t.k, t.v FROM unnest(p_keys[g.lo:g.hi], p_values[g.lo:g.hi]) AS t(k, v)
                            ON CONFLICT (db, path) DO UPDATE SET value = EXCLUDED.value;
                    ELSE
                        DELETE FROM hearth_rows
                            WHERE db = p_db AND path = ANY (ARRAY(
                                SELECT t.k FROM unnest(p_kinds[g.lo:g.hi], p_keys[g.lo:g.hi]) AS t(kind, k) WHERE t.kind = 'd'
                            ));
                        DELETE FROM hearth_rows r
                            USING (
                                SELECT t.k, t.v FROM unnest(p_kinds[g.lo:g.hi], p_keys[g.lo:g.hi], p_values[g.lo:g.hi]) AS t(kind, k, v)
                                WHERE t.kind = 'r'
                            ) AS d
                            WHERE r.db = p_db AND r.path >= d.k COLLATE "C" AND r.path < d.v COLLATE "C";
                    END IF;
                END LOOP;
            END IF;
            INSERT INTO hearth_log (db, seq, payload) VALUES (p_db, v_seq, p_payload);
            IF v_seq % \(trimEvery) = 0 THEN
                DELETE FROM hearth_log
                    WHERE db = p_db AND seq <= v_seq - \(keptLogEntries)
                      AND committed_at < now() - interval '\(logRetentionMinutes) minutes';
            END IF;
            RETURN v_seq;
        END
        $fn$
        """,
        // Rules: the current source, a new history version (the last ones kept), and a log entry
        // {"rules":true} so that every node reloads the rules when it applies the log.
        """
        CREATE OR REPLACE FUNCTION hearth_save_rules(p_db text, p_source text, p_time bigint)
        RETURNS bigint LANGUAGE plpgsql AS $fn$
        DECLARE
            v_seq bigint;
        BEGIN
            INSERT INTO hearth_databases (db) VALUES (p_db) ON CONFLICT (db) DO NOTHING;
            UPDATE hearth_databases SET rules = p_source, last_seq = last_seq + 1 WHERE db = p_db
                RETURNING last_seq INTO v_seq;
            INSERT INTO hearth_rules_history (db, source, time) VALUES (p_db, p_source, p_time);
            DELETE FROM hearth_rules_history
                WHERE db = p_db AND version <= (
                    SELECT version FROM hearth_rules_history WHERE db = p_db
                    ORDER BY version DESC OFFSET \(rulesKept) LIMIT 1
                );
            INSERT INTO hearth_log (db, seq, payload) VALUES (p_db, v_seq, '\(rulesPayload)');
            RETURN v_seq;
        END
        $fn$
        """,
    ]

    /// Rules versions kept per database, as in SQLite.
    static let rulesKept = RulesVersion.kept

    /// The log entry a rules save appends: nodes reload the rules when they apply it.
    static let rulesPayload = LogEntry.rulesPayload
}
