//! The built-in classifier on realistic snippets, with the original
//! classifier's arithmetic worked by hand (issue 28 point 1).

use cupel_gate::CodeNode;
use cupel_gate::{BuiltinClassifier, CodeKind};
use cupel_gate::{CodeLanguage, LanguageClassifier};

fn lang(t: &str) -> CodeLanguage {
    BuiltinClassifier.classify(t)
}

const TSQL_PROC: &str = r"
-- =============================================
-- Author:      Reporting team
-- Description: monthly revenue per region
-- =============================================
CREATE OR ALTER PROCEDURE dbo.usp_MonthlyRevenue
    @Year INT,
    @Region NVARCHAR(50) = NULL
AS
BEGIN
    SET NOCOUNT ON;

    DECLARE @From DATE = DATEFROMPARTS(@Year, 1, 1);

    SELECT  r.[Region Name],
            MONTH(o.OrderDate) AS [Month],
            SUM(o.Total)       AS Revenue
    FROM    dbo.Orders o
    JOIN    dbo.Regions r ON r.RegionId = o.RegionId
    WHERE   o.OrderDate >= @From
      AND   (@Region IS NULL OR r.[Region Name] = @Region)
    GROUP BY r.[Region Name], MONTH(o.OrderDate)
    ORDER BY 1, 2;
END
GO
";

const ANSI_QUERY: &str = "select c.name, count(*) as orders
from customers c
inner join orders o on o.customer_id = c.id
where o.created_at >= date '2024-01-01'
group by c.name
having count(*) > 3
order by orders desc;";

const TSQL_SCRIPT: &str = "DECLARE @n INT = 0;
WHILE @n < 10
BEGIN
    INSERT INTO #numbers (n) VALUES (@n);
    SET @n = @n + 1;
END;
UPDATE dbo.Settings SET Value = 'on' WHERE Name = 'feature_x';";

const DDL: &str = "CREATE TABLE invoices (
    id          BIGINT PRIMARY KEY,
    customer_id BIGINT NOT NULL REFERENCES customers(id),
    amount      NUMERIC(12, 2) NOT NULL
);
CREATE INDEX ix_invoices_customer ON invoices (customer_id);";

const CSHARP_PLAIN: &str = r#"using System;
using System.Collections.Generic;

namespace Shop.Domain
{
    /// <summary>An order line.</summary>
    public sealed class OrderLine
    {
        public string Sku { get; init; } = "";
        public int Quantity { get; set; }

        public decimal Total(decimal unitPrice) => unitPrice * Quantity;
    }
}"#;

const CSHARP_WITH_SQL: &str = r#"public class OrderRepository
{
    private readonly IDbConnection _db;

    public OrderRepository(IDbConnection db) => _db = db;

    public async Task<IReadOnlyList<Order>> RecentAsync(int days)
    {
        const string sql = @"
            SELECT o.Id, o.Total, o.CreatedAt
            FROM dbo.Orders o
            WHERE o.CreatedAt >= DATEADD(day, -@days, SYSUTCDATETIME())
            ORDER BY o.CreatedAt DESC;";
        var rows = await _db.QueryAsync<Order>(sql, new { days });
        return rows.ToList();
    }
}"#;

const CSHARP_METHOD_ONLY: &str = r#"public async Task<int> CountActiveAsync(CancellationToken ct)
{
    var count = await _context.Users.CountAsync(u => u.IsActive, ct);
    _logger.LogInformation("Active users: {Count}", count);
    return count;
}"#;

const CSHARP_RAW_SQL: &str = r#"namespace Reports;

internal static class Queries
{
    public const string Revenue = """
        SELECT Region, SUM(Total) FROM Sales GROUP BY Region;
        """;
}"#;

const SQL_WITH_JSON: &str = "INSERT INTO dbo.Events (Payload)
VALUES (N'{\"type\": \"login\", \"user\": 42}');";

const PYTHON_WITH_SQL: &str = r#"import sqlite3

def monthly_revenue(conn: sqlite3.Connection, year: int) -> list[tuple]:
    # Revenue per month.
    query = """
        SELECT strftime('%m', created_at) AS month, SUM(total)
        FROM orders
        WHERE strftime('%Y', created_at) = ?
        GROUP BY month
    """
    return conn.execute(query, (str(year),)).fetchall()
"#;

const PYTHON_CLASS: &str = "class Cache:
    def __init__(self, size):
        self.size = size
        self.items = {}

    def get(self, key):
        if key in self.items:
            return self.items[key]
        return None
";

const PROSE: &str = "To update the report, select the rows you need from the sales table, \
then order them by date. The query should be fast because it is only run once a day.";

const PROSE_ABOUT_CSHARP: &str = "In C#, a public class can expose properties with get and set \
accessors. You should keep the class small and give it one responsibility; that is how we \
structure every service in this project.";

const JAVA: &str = "package shop;

import java.util.List;

public class OrderService {
    public List<Order> recent() {
        return repo.findAll();
    }
}";

const JSON: &str = r#"{ "name": "cupel", "select": "from", "version": 1 }"#;

#[test]
fn sql_snippets_are_sql() {
    for (name, t) in [
        ("T-SQL procedure", TSQL_PROC),
        ("ANSI query", ANSI_QUERY),
        ("T-SQL script", TSQL_SCRIPT),
        ("DDL", DDL),
        ("one-liner", "SELECT 1 AS one FROM dual"),
        ("delete", "DELETE FROM sessions WHERE expires_at < now();"),
        ("braces only inside a string", SQL_WITH_JSON),
    ] {
        assert_eq!(lang(t), CodeLanguage::Sql, "{name}");
    }
}

#[test]
fn csharp_with_and_without_sql_is_dotnet() {
    for (name, t) in [
        ("plain class", CSHARP_PLAIN),
        ("repository with SQL", CSHARP_WITH_SQL),
        ("method only", CSHARP_METHOD_ONLY),
        ("raw string SQL", CSHARP_RAW_SQL),
    ] {
        assert_eq!(lang(t), CodeLanguage::Dotnet, "{name}");
    }
}

#[test]
fn everything_else_is_unknown() {
    for (name, t) in [
        ("Python with SQL", PYTHON_WITH_SQL),
        ("Python class", PYTHON_CLASS),
        ("prose about C#", PROSE_ABOUT_CSHARP),
        ("JSON", JSON),
        ("a word", "hello"),
    ] {
        assert_eq!(lang(t), CodeLanguage::Unknown, "{name}");
    }
}

#[test]
fn classification_is_deterministic_and_total() {
    for t in [
        TSQL_PROC,
        CSHARP_WITH_SQL,
        PROSE,
        "\u{0}\u{ffff}'\"@$",
        "'''",
        "/*",
        "@\"",
    ] {
        assert_eq!(lang(t), lang(t));
    }
}

mod never_panics {
    use super::lang;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn on_arbitrary_text(t in any::<String>()) {
            let first = lang(&t);
            prop_assert_eq!(first, lang(&t));
        }

        #[test]
        fn on_code_shaped_text(
            t in "[-/*'\"@$#{}();=<>a-zA-Z0-9 \n\t\\\\\u{e9}\u{2028}]{0,200}",
            keyword in prop::sample::select(vec![
                "SELECT ", " FROM ", "using System;", "namespace ", "public class ", "{ get; set; }",
                "DECLARE @x", "def f():", "/*", "*/", "--", "//", "@\"", "$\"", "\"\"\"",
            ]),
        ) {
            // Keywords spliced in at both ends reach the deeper branches.
            let text = format!("{keyword}{t}{keyword}");
            let first = lang(&text);
            prop_assert_eq!(first, lang(&text));
        }
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

/// Issue 28 point 1: a one-letter alias `i` no longer hides a query.
#[test]
fn sql_with_a_one_letter_alias_is_sql() {
    let text = "SELECT i.id, i.customer_id, i.total
FROM invoices i
WHERE i.due_date < CURRENT_DATE AND i.paid = 0
ORDER BY i.id;";
    let s = BuiltinClassifier.scores(text);
    // Identifier words: SELECT i id i customer_id i total (7), FROM invoices i
    // (3), WHERE i due_date CURRENT_DATE AND i paid (7), ORDER BY i id (4) = 21
    // (< 60: thresholds 14).
    assert_eq!(s.words, 21);
    // SQL keywords SELECT, FROM, WHERE, ORDER, BY: 5 distinct, 5 in all
    // -> 2.2 * 5 + 0.18 * 5 = 11.9; SELECT ... FROM: + 10 -> 21.9 >= 14.
    assert!(close(s.sql, 21.9), "{s:?}");
    assert!(close(s.dotnet, 0.0), "{s:?}");
    assert_eq!(s.kind, CodeKind::Sql);
    assert_eq!(lang(text), CodeLanguage::Sql);
    // The aliases that used to work still do.
    for alias in ["inv", "a", "t"] {
        let with = text
            .replace(" i.", &format!(" {alias}."))
            .replace(" i\n", &format!(" {alias}\n"));
        assert_eq!(lang(&with), CodeLanguage::Sql, "{alias}");
    }
}

/// Issue 28 point 1: an attribute with an expression-bodied member, no braces.
#[test]
fn braceless_attribute_and_expression_body_is_dotnet() {
    let text = r#"[HttpGet("{id}")] public async Task<Order> Get(int id) => await _db.Orders.FindAsync(id);"#;
    let s = BuiltinClassifier.scores(text);
    // public 1 -> 1.5 + 0.3 = 1.8; async 1 -> 3 + 0.7 = 3.7; await 1 -> 3.7;
    // `=>` once -> 6 + 0.4 = 6.4; generic Task<Order> once -> 4 + 0.5 = 4.5;
    // the attribute shares its line, so the attribute rule does not fire:
    // 1.8 + 3.7 + 3.7 + 6.4 + 4.5 = 20.1 >= 14 (14 identifier words).
    assert_eq!(s.words, 14);
    assert!(close(s.dotnet, 20.1), "{s:?}");
    // SQL: the word `Order` is the keyword ORDER: 2.2 + 0.18 = 2.38 < 12.
    assert!(close(s.sql, 2.38), "{s:?}");
    assert_eq!(s.kind, CodeKind::Dotnet);
    // On its own line the attribute adds 6 + 0.8: 26.9.
    let two_lines = text.replacen("] ", "]\n", 1);
    assert!(close(BuiltinClassifier.scores(&two_lines).dotnet, 26.9));
    assert_eq!(lang(&two_lines), CodeLanguage::Dotnet);
}

/// Issue 28 point 1: a file-scoped namespace and a positional record.
#[test]
fn file_scoped_namespace_and_record_is_dotnet() {
    let text = "namespace Shop.Orders;\npublic record OrderCreated(int Id, decimal Total);";
    let s = BuiltinClassifier.scores(text);
    // namespace line once -> 10 + 2 = 12; record 1 -> 8 + 1 = 9; public 1 -> 1.8:
    // 22.8 >= 14; no SQL keyword.
    assert!(close(s.dotnet, 22.8), "{s:?}");
    assert!(close(s.sql, 0.0), "{s:?}");
    assert_eq!(s.kind, CodeKind::Dotnet);
    // On one line the namespace rule still fires (it needs `;` or `{` after the name).
    assert_eq!(lang(&text.replace('\n', " ")), CodeLanguage::Dotnet);
}

/// The seed: DOTNET and DOTNET_WITH_SQL both map to `dotnet`.
#[test]
fn dotnet_with_sql_maps_to_dotnet() {
    let s = BuiltinClassifier.scores(CSHARP_WITH_SQL);
    assert_eq!(s.kind, CodeKind::DotnetWithSql);
    assert_eq!(s.kind.language(), CodeLanguage::Dotnet);
    // An EF migration calling migrationBuilder.Sql is .NET with SQL whatever the scores.
    let migration = "public partial class AddView : Migration\n{\n    protected override void Up(MigrationBuilder migrationBuilder)\n    {\n        migrationBuilder.Sql(\"x\");\n    }\n}";
    assert_eq!(
        BuiltinClassifier.scores(migration).kind,
        CodeKind::DotnetWithSql
    );
}

/// Deliberate changes from the earlier heuristic, by the original's rules.
#[test]
fn the_original_rules_decide_borderline_texts() {
    // Prose full of SQL words: UPDATE, SELECT, FROM, THEN, ORDER, BY -> 6 distinct,
    // 6 in all: 13.2 + 1.08 = 14.28; SELECT ... FROM: + 10 = 24.28 >= 14 -> sql.
    let s = BuiltinClassifier.scores(PROSE);
    assert!(close(s.sql, 24.28), "{s:?}");
    assert_eq!(s.kind, CodeKind::Sql);
    // Java: class 9, public x2 -> 2.1, generic List<Order> 4.5, 3 `;` and 4
    // braces 2.5: 18.1 >= 14, and SQL 2.38 (ORDER) < 12 -> dotnet.
    let s = BuiltinClassifier.scores(JAVA);
    assert!(close(s.dotnet, 18.1), "{s:?}");
    assert_eq!(s.kind, CodeKind::Dotnet);
    // A bare EXEC line: EXEC is 1 keyword, 2.38 < 12 -> unknown.
    let s = BuiltinClassifier.scores("EXEC dbo.usp_Rebuild @full = 1;");
    assert!(close(s.sql, 2.38), "{s:?}");
    assert_eq!(s.kind, CodeKind::Unknown);
    // DELETE, FROM, WHERE: 7.14; DELETE ... FROM within 120 characters: + 9 = 16.14.
    assert!(close(
        BuiltinClassifier
            .scores("DELETE FROM sessions WHERE expires_at < now();")
            .sql,
        16.14
    ));
    // INI text with weak scores is not code: a section and key = value lines.
    let ini = "[database]\nhost = localhost\nnamespace = shop\nclass = primary\n";
    let s = BuiltinClassifier.scores(ini);
    assert!(s.config_like);
    assert_eq!(s.kind, CodeKind::Unknown);
}

/// Issue 28 point 1: the path decides when it names a SQL or .NET file.
#[test]
fn the_path_decides_when_present() {
    let c = BuiltinClassifier;
    let node = |text, path| CodeNode::new(text).with_path(path);
    assert_eq!(
        c.classify_node(node("hello", Some("db/Report.SQL"))),
        CodeLanguage::Sql
    );
    assert_eq!(
        c.classify_node(node("hello", Some(r"src\Order.cs"))),
        CodeLanguage::Dotnet
    );
    assert_eq!(
        c.classify_node(node("<Project/>", Some("Shop.csproj"))),
        CodeLanguage::Dotnet
    );
    // The path beats the text.
    assert_eq!(
        c.classify_node(node(TSQL_PROC, Some("notes/Order.cs"))),
        CodeLanguage::Dotnet
    );
    // Other extensions, or none, leave it to the text.
    assert_eq!(
        c.classify_node(node(TSQL_PROC, Some("notes/proc.txt"))),
        CodeLanguage::Sql
    );
    assert_eq!(c.classify_node(node(TSQL_PROC, None)), CodeLanguage::Sql);
    // `classify` alone never sees a path.
    assert_eq!(c.classify("hello"), CodeLanguage::Unknown);
}

/// Embedded SQL, worked by hand from the original's literal rules.
#[test]
fn embedded_sql_scores_by_hand() {
    // The verbatim literal, collapsed: "select o.id, o.total, o.createdat from
    // dbo.orders o where o.createdat >= dateadd(day, -@days, sysutcdatetime())
    // order by o.createdat desc;". Phrases select, from, where, order by (4)
    // and functions dateadd, sysutcdatetime (2): 6 × 2.1 = 12.6; one @param
    // 1.1; select … from dbo.orders 9; verbatim counts as multi-line 2:
    // 24.7 × 1.07 (C# quotes) = 26.429 >= 12 -> DOTNET_WITH_SQL.
    let s = BuiltinClassifier.scores(CSHARP_WITH_SQL);
    assert!(close(s.embedded_sql, 26.429), "{s:?}");
    assert_eq!(s.kind, CodeKind::DotnetWithSql);
    // The raw literal "SELECT Region, SUM(Total) FROM Sales GROUP BY Region;":
    // select, from, group by 6.3; select … from sales 9; raw is multi-line 2:
    // 17.3 × 1.07 = 18.511. The code: namespace line 12, class 9, public,
    // internal, static 1.8 each: 26.4.
    let s = BuiltinClassifier.scores(CSHARP_RAW_SQL);
    assert!(close(s.embedded_sql, 18.511), "{s:?}");
    assert!(close(s.dotnet, 26.4), "{s:?}");
    assert_eq!(s.kind, CodeKind::DotnetWithSql);
    // A short log message is not SQL: under 60 characters without a statement.
    let s = BuiltinClassifier.scores(r#"_log.Info("order saved, reset pending");"#);
    assert!(close(s.embedded_sql, 0.0), "{s:?}");
    // A short literal with a statement counts: "select the update from the
    // queue" has select, update, from (6.3) and select … from the (9):
    // 15.3 × 1.07 = 16.371.
    let s = BuiltinClassifier.scores(r#"_log.Info("select the update from the queue");"#);
    assert!(close(s.embedded_sql, 16.371), "{s:?}");
}
