//! The repository paths the docs name exist: a doc is reference for today's code, and a path
//! that moved is the first sign it no longer is. Checked by a fast test over every Markdown file.

use std::path::{Path, PathBuf};

/// Directories the docs name that exist only at run time (ignored by git).
const GENERATED: &[&str] = &["e2e/.run", "e2e/.run-lane2", "bench/results"];

/// Backticked words that look like repository paths but are not.
const NOT_PATHS: &[(&str, &str)] = &[("aws/config/root", "a Vault path (the AWS secrets engine's root config)")];

/// Every Markdown file of the repository, outside build outputs and generated directories.
fn markdown_files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for e in entries.flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().to_string();
            if p.is_dir() {
                let rel = p.strip_prefix(root).unwrap_or(&p).to_string_lossy().to_string();
                let skip = name.starts_with('.') && name != ".ci"
                    || ["target", "node_modules", "__pycache__"].contains(&name.as_str())
                    || GENERATED.contains(&rel.as_str());
                if !skip {
                    dirs.push(p);
                }
            } else if name.ends_with(".md") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The repository paths named in backticks in `text` (`path`, `path/`, `path::item`): words made
/// of path characters with a `/`, whose first segment is one of `top` (the repository's top-level
/// entries), minus generated directories and [`NOT_PATHS`].
fn named_paths(text: &str, top: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, span) in text.split('`').enumerate() {
        if i % 2 == 0 {
            continue;
        }
        let word = span.split("::").next().unwrap_or_default();
        let pathlike = word.contains('/')
            && !word.contains("//")
            && word.chars().all(|c| c.is_ascii_alphanumeric() || "._-/".contains(c));
        let first = word.split('/').next().unwrap_or_default();
        if !pathlike || !top.iter().any(|t| t == first) {
            continue;
        }
        let path = word.trim_end_matches('/');
        let generated = GENERATED.iter().any(|g| path == *g || path.starts_with(&format!("{g}/")));
        if !generated && !NOT_PATHS.iter().any(|(p, _)| *p == path) {
            out.push(path.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("repository root").to_path_buf()
    }

    #[test]
    fn every_path_a_doc_names_exists() {
        let root = repo();
        let top: Vec<String> = std::fs::read_dir(&root)
            .expect("repository root")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().to_string())
            .collect();
        let docs = markdown_files(&root);
        assert!(docs.len() > 10, "found the docs: {docs:?}");
        let mut missing = Vec::new();
        for doc in &docs {
            let text = std::fs::read_to_string(doc).expect("read doc");
            for p in named_paths(&text, &top) {
                if !root.join(&p).exists() {
                    missing.push(format!("{}: {p}", doc.strip_prefix(&root).unwrap_or(doc).display()));
                }
            }
        }
        assert!(
            missing.is_empty(),
            "docs name paths that do not exist (moved? update the doc):\n{}",
            missing.join("\n")
        );
    }

    #[test]
    fn what_counts_as_a_named_path() {
        let top = ["model".to_string(), "docs".to_string(), "e2e".to_string(), "aws".to_string()];
        let text = "See `model/src/lib.rs`, `docs/` alone, `model/src/plan.rs::decide`, `e2e/.run/env`, \
                    `aws/config/root`, `kubectl get pods`, `a/b`, `http://x/y` and `docs/ci.md`.";
        assert_eq!(named_paths(text, &top), ["model/src/lib.rs", "docs", "model/src/plan.rs", "docs/ci.md"]);
    }
}
