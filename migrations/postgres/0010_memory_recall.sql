-- Recall ranks a bounded set of candidates: the rarest of a task's terms
-- first, then rows sharing all its common terms. `memory_terms` counts
-- the memories holding each term (kept by a trigger, in term order so
-- concurrent writers lock rows in the same order); pinned memories are
-- found by their index.
CREATE TABLE memory_terms (
    term TEXT PRIMARY KEY,
    docs BIGINT NOT NULL
);

CREATE FUNCTION memory_terms_count() RETURNS trigger AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        UPDATE memory_terms SET docs = docs - 1
        WHERE term IN (SELECT DISTINCT t FROM unnest(string_to_array(OLD.terms, ' ')) AS t ORDER BY t);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO memory_terms (term, docs)
        SELECT t, 1 FROM (SELECT DISTINCT t FROM unnest(string_to_array(NEW.terms, ' ')) AS t WHERE t <> '') AS s ORDER BY t
        ON CONFLICT (term) DO UPDATE SET docs = memory_terms.docs + 1;
    END IF;
    RETURN NULL;
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER memories_terms_count AFTER INSERT OR DELETE OR UPDATE OF terms ON memories
    FOR EACH ROW EXECUTE FUNCTION memory_terms_count();

INSERT INTO memory_terms (term, docs)
SELECT t, count(*) FROM memories, unnest(string_to_array(terms, ' ')) AS t WHERE t <> '' GROUP BY t;

CREATE INDEX memories_pinned ON memories (created_at) WHERE pinned = 1;
