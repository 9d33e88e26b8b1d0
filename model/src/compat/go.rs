//! Value syntax of Go's `flag`/`pflag` packages, which ALBC's command line uses.

/// A boolean as Go's `strconv.ParseBool` reads it: `1 t T TRUE true True`, `0 f F FALSE false False`.
pub fn parse_go_bool(s: &str) -> Result<bool, String> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        _ => Err(format!("invalid boolean {s:?}: expected true or false (Go syntax: 1, t, T, TRUE, True, 0, f, …)")),
    }
}

/// `Key=bool,Key=bool` (ALBC's `--feature-gates`). Blanks around entries are allowed; an empty
/// string is no entries. A key given twice keeps the last value, as ALBC's parser does.
pub fn parse_key_bools(flag: &str, s: &str) -> Result<Vec<(String, bool)>, String> {
    let mut out: Vec<(String, bool)> = Vec::new();
    for entry in s.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (key, value) = entry
            .split_once('=')
            .ok_or_else(|| format!("{flag}: entry {entry:?} has no '=': expected Name=true or Name=false"))?;
        let key = key.trim();
        if key.is_empty() {
            return Err(format!("{flag}: entry {entry:?} has no name before '='"));
        }
        let value = parse_go_bool(value.trim()).map_err(|e| format!("{flag}: {key}: {e}"))?;
        out.retain(|(k, _)| k != key);
        out.push((key.to_string(), value));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_booleans() {
        for t in ["1", "t", "T", "TRUE", "true", "True"] {
            assert_eq!(parse_go_bool(t), Ok(true), "{t}");
        }
        for f in ["0", "f", "F", "FALSE", "false", "False"] {
            assert_eq!(parse_go_bool(f), Ok(false), "{f}");
        }
        for bad in ["", "yes", "tRUE", "on", " true"] {
            assert!(parse_go_bool(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn key_bool_lists() {
        assert_eq!(parse_key_bools("--feature-gates", ""), Ok(vec![]));
        assert_eq!(
            parse_key_bools("--feature-gates", "A=true, B=0,A=false").unwrap(),
            vec![("B".to_string(), false), ("A".to_string(), false)]
        );
        let e = parse_key_bools("--feature-gates", "A").unwrap_err();
        assert!(e.contains("--feature-gates") && e.contains("\"A\"") && e.contains("Name=true"), "{e}");
        let e = parse_key_bools("--feature-gates", "A=maybe").unwrap_err();
        assert!(e.contains("A:") && e.contains("\"maybe\""), "{e}");
        assert!(parse_key_bools("--feature-gates", "=true").is_err());
    }
}
