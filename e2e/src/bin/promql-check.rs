//! `promql-check`: parses PromQL expressions with an independent PromQL parser (the `promql-parser` crate) so a
//! typo in the chart's alert rules or the Grafana dashboard fails a test instead of an operator's page.
//!
//! Input: a JSON array of strings on stdin (charts/tests/test_chart.py sends every dashboard query and alert
//! expression, with Grafana's `$variables` already substituted). Output: one line per expression that does not
//! parse, `<index>: <error> in <expr>`; exit status 1 when there is any, 0 otherwise.

use std::io::Read;

fn main() {
    let mut input = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut input) {
        eprintln!("promql-check: reading stdin: {e}");
        std::process::exit(2);
    }
    let exprs: Vec<String> = match serde_json::from_str(&input) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("promql-check: stdin must be a JSON array of strings: {e}");
            std::process::exit(2);
        }
    };
    let mut bad = 0;
    for (i, e) in exprs.iter().enumerate() {
        if let Err(err) = promql_parser::parser::parse(e) {
            println!("{i}: {} in {e}", err.trim());
            bad += 1;
        }
    }
    std::process::exit(if bad > 0 { 1 } else { 0 });
}
