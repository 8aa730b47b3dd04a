//! The built-in classifier on realistic snippets.

use cupel_core::{CodeLanguage, LanguageClassifier};
use cupel_pipeline::BuiltinClassifier;

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
        ("exec", "EXEC dbo.usp_Rebuild @full = 1;"),
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
        ("prose mentioning select/from/order by", PROSE),
        ("prose about C#", PROSE_ABOUT_CSHARP),
        ("Java", JAVA),
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
