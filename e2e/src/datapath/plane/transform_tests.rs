use super::*;
use crate::datapath::plane::http::read_request;
use crate::datapath::plane::https::tests::{exchange, serving_plane, target};
use serde_json::json;
use std::net::TcpStream;
use std::time::Duration;

fn req(text: &str) -> Request {
    read_request(&mut std::io::Cursor::new(text.as_bytes())).unwrap().unwrap()
}

fn rw(regex: &str, replace: &str) -> RewriteView {
    RewriteView { regex: regex.into(), replace: replace.into() }
}

fn url(regex: &str, replace: &str) -> TransformView {
    TransformView { kind: "url-rewrite".into(), rewrites: vec![rw(regex, replace)] }
}

fn host(regex: &str, replace: &str) -> TransformView {
    TransformView { kind: "host-header-rewrite".into(), rewrites: vec![rw(regex, replace)] }
}

/// (request target, Host header) the target receives for `request` through `transforms`.
fn sent(transforms: &[TransformView], request: &str) -> Result<(String, Option<String>), String> {
    let r = req(request);
    let out = apply(transforms, &r)?;
    Ok((out.target.clone(), out.header("host").map(str::to_string)))
}

// AWS RewriteConfig Replace: "You can specify capture groups in the regular expression (for
// example, $1 and $2)". The `regex` crate reads `$1abc` as a group named `1abc`: each `$N` becomes
// `${N}`; a `$` without a digit after it stays a literal `$` (ours).
#[test]
fn replace_strings_name_groups_by_number_only() {
    assert_eq!(replacement("/product.php?id=$1"), ("/product.php?id=${1}".into(), Some(1)));
    assert_eq!(replacement("$1abc$2"), ("${1}abc${2}".into(), Some(2)));
    assert_eq!(replacement("/new$2"), ("/new${2}".into(), Some(2)));
    assert_eq!(replacement("$12x"), ("${12}x".into(), Some(12)), "all the digits");
    assert_eq!(replacement("a$b$"), ("a$$b$$".into(), None));
    assert_eq!(replacement("$$1 ${1} $name"), ("$$${1} $${1} $$name".into(), Some(1)));
    assert_eq!(replacement("new.example.com"), ("new.example.com".into(), None));
    assert_eq!(rewrite(&rw("^/(a)$", "/$$1/x$"), "/a"), Ok(Some("/$a/x$".into())));
    assert_eq!(rewrite(&rw("^/(a)$", "/${1}"), "/a"), Ok(Some("/${1}".into())), "${{1}} is not AWS syntax");
    assert_eq!(rewrite(&rw("^/(a)(b)$", "/$2$1$0"), "/ab"), Ok(Some("/ba/ab".into())), "$0: the whole match");
}

// AWS "Transforms for listener rules", its two examples: Regex "^/dp/([A-Za-z0-9]+)/?$", Replace
// "/product.php?id=$1"; Regex "^mywebsite-(.+).com$", Replace "internal.dev.$1.myweb.com".
#[test]
fn the_aws_examples_rewrite_as_documented() {
    let dp = url("^/dp/([A-Za-z0-9]+)/?$", "/product.php?id=$1");
    assert_eq!(
        sent(&[dp], "GET /dp/B09G3HRMW HTTP/1.1\r\nHost: www.example.com\r\n\r\n"),
        Ok(("/product.php?id=B09G3HRMW".into(), Some("www.example.com".into())))
    );
    let web = host("^mywebsite-(.+).com$", "internal.dev.$1.myweb.com");
    assert_eq!(
        sent(&[web], "GET /project-a HTTP/1.1\r\nHost: mywebsite-example.com\r\n\r\n"),
        Ok(("/project-a".into(), Some("internal.dev.example.myweb.com".into())))
    );
}

// The controller's shapes for a Gateway API URLRewrite (ALBC's): hostname (Regex ".*"), full path
// (Regex "^([^?]*)": the path, not the query) and prefix (Regex "(^/prefix(/)?)", Replace
// "/new$2", "/" when the prefix is replaced by nothing, "/new/" when the replacement ends with "/").
// "url-rewrite: Rewrites the request URL", path and query string: the query stays where the
// regex leaves it.
#[test]
fn the_controllers_rewrites_give_what_the_gateway_api_asks() {
    let at =
        |t: TransformView, target: &str| sent(&[t], &format!("GET {target} HTTP/1.1\r\nHost: h\r\n\r\n")).unwrap().0;
    assert_eq!(at(url("^([^?]*)", "/new/path"), "/old/x?a=1&b=2"), "/new/path?a=1&b=2");
    assert_eq!(at(url("^([^?]*)", "/new/path"), "/"), "/new/path");
    let prefix = |replace: &str| url("(^/prefix(/)?)", replace);
    assert_eq!(at(prefix("/new$2"), "/prefix/x/y?q=1"), "/new/x/y?q=1");
    assert_eq!(at(prefix("/new$2"), "/prefix"), "/new", "a group that took no part is empty");
    assert_eq!(at(prefix("/new$2"), "/prefix/"), "/new/");
    assert_eq!(at(prefix("/"), "/prefix/x"), "/x");
    assert_eq!(at(prefix("/"), "/prefix"), "/");
    assert_eq!(at(prefix("/new/"), "/prefix/x"), "/new/x");
    assert_eq!(at(prefix("/new/"), "/prefix"), "/new/");
    // The Host header as sent, its port included: ".*" replaces all of it.
    let h = |value: &str| sent(&[host(".*", "new.example.com")], &format!("GET / HTTP/1.1\r\nHost: {value}\r\n\r\n"));
    assert_eq!(h("old.example.com").unwrap().1.as_deref(), Some("new.example.com"));
    assert_eq!(h("old.example.com:8080").unwrap().1.as_deref(), Some("new.example.com"));
}

// "If there is no pattern match, the original request is sent to the target"; the first match
// only is replaced (ours); without a Host header there is no host to rewrite (ours).
#[test]
fn without_a_match_the_request_goes_as_sent() {
    let r = req("GET /a?x=1 HTTP/1.1\r\nHost: shop.example.com\r\nX-Env: blue\r\n\r\n");
    let both = [url("^/api/(.*)$", "/$1"), host("^api\\.", "internal.")];
    assert!(matches!(apply(&both, &r), Ok(Cow::Borrowed(b)) if *b == r));
    assert_eq!(sent(&[url("a", "b")], "GET /aaa HTTP/1.1\r\n\r\n"), Ok(("/baa".into(), None)));
    assert_eq!(sent(&[host(".*", "new.example.com")], "GET / HTTP/1.0\r\n\r\n"), Ok(("/".into(), None)));
    // Both transforms of a rule apply; the other headers and the body are kept.
    let r = req("POST /api/v1?x=1 HTTP/1.1\r\nHost: api.example.com\r\nX-Env: blue\r\nContent-Length: 2\r\n\r\nhi");
    let out = apply(&both, &r).unwrap();
    assert_eq!((out.target.as_str(), out.header("host")), ("/v1?x=1", Some("internal.example.com")));
    assert_eq!((out.header("x-env"), out.body.as_slice()), (Some("blue"), &b"hi"[..]));
}

// Several rewrites of one transform: in order, each on the previous result (ours).
#[test]
fn rewrites_of_one_transform_apply_in_turn() {
    let t =
        TransformView { kind: "url-rewrite".into(), rewrites: vec![rw("^/a", "/b"), rw("^/b", "/c"), rw("z", "y")] };
    assert_eq!(sent(std::slice::from_ref(&t), "GET /a/1 HTTP/1.1\r\n\r\n").unwrap().0, "/c/1");
    assert_eq!(sent(&[t], "GET /b/z HTTP/1.1\r\n\r\n").unwrap().0, "/c/y");
}

// "If there is a pattern match but the transform fails, we return an HTTP 500 error": a group the
// regex lacks, a result that cannot be sent (ours); a regex the data plane cannot compile fails too.
#[test]
fn transforms_that_match_but_fail_are_errors() {
    let get =
        |t: TransformView, target: &str| sent(&[t], &format!("GET {target} HTTP/1.1\r\nHost: h.example.com\r\n\r\n"));
    let e = get(url("^/(a)$", "/$1/$3"), "/a").unwrap_err();
    assert!(e.contains("$3 names a group the regex does not have (1 group(s))"), "{e}");
    assert_eq!(
        get(url("^/(a)$", "/$3"), "/b"),
        Ok(("/b".into(), Some("h.example.com".into()))),
        "no match: no failure"
    );
    for bad in ["new", "/a b", "/a#frag", "/\u{e9}", ""] {
        let e = get(url(".*", bad), "/a").unwrap_err();
        assert!(e.starts_with("url-rewrite result") && e.contains("expected \"/\" first"), "{bad:?}: {e}");
    }
    for bad in ["", "a b", "a/b", "h\u{e9}.example.com"] {
        let e = get(host(".*", bad), "/a").unwrap_err();
        assert!(e.starts_with("host-header-rewrite result"), "{bad:?}: {e}");
    }
    assert!(get(host(".*", "[fd00::1]:8080"), "/").is_ok());
    let e = get(url("(", "/"), "/a").unwrap_err();
    assert!(e.contains("does not compile"), "{e}");
    let e = get(TransformView { kind: "header-rewrite".into(), rewrites: vec![] }, "/").unwrap_err();
    assert_eq!(e, "transform header-rewrite is not supported by lbc-dataplane");
}

#[test]
fn listeners_report_what_they_cannot_evaluate() {
    let l: ListenerView = serde_json::from_value(json!({
        "protocol": "HTTP", "port": 80, "default_actions": [],
        "rules": [
            {"priority": 3, "actions": [], "conditions": [{"field": "host-header", "regex_values": ["^ok$", "a{"]}],
             "transforms": [{"type": "url-rewrite", "rewrites": [{"regex": "(", "replace": "/"}]},
                            {"type": "host-header-rewrite", "rewrites": [{"regex": ".*", "replace": "x"}]}]},
            {"priority": 4, "actions": [], "conditions": [], "transforms": [{"type": "other"}]},
        ],
    }))
    .unwrap();
    let p = problems(&l);
    assert_eq!(p.len(), 3, "{p:?}");
    assert!(p[0].starts_with("listener port=80 rule priority 3: host-header condition regex \"a{\" does not compile"));
    assert!(p[0].ends_with("the condition never matches"), "{}", p[0]);
    assert!(p[1].starts_with("listener port=80 rule priority 3: url-rewrite regex \"(\" does not compile"));
    assert!(p[1].ends_with("(answered 500)"), "{}", p[1]);
    assert_eq!(
        p[2],
        "listener port=80 rule priority 4: transform other is not supported by lbc-dataplane (answered 500)"
    );
}

/// A request on a new connection to 127.0.0.1:`port`; the response.
fn ask(port: u16, request: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    exchange(&mut s, request)
}

// Through the serving path: "Rewriting a request does not change the routing decision made when
// evaluating the rule conditions" (the rule matched the path and host as sent, the rewritten path
// would match another rule); the target receives the rewritten path and Host header, with the
// X-Forwarded-* headers as always. Redirects answer from the request as sent; a transform that
// fails is answered 500 and nothing reaches the target.
#[test]
fn targets_receive_the_rewritten_request_of_the_rule_that_matched() {
    let (target_port, seen) = target();
    let fixed = |body: &str| {
        json!([{"type": "fixed-response", "status_code": 200, "content_type": "text/plain",
                                     "message_body": body}])
    };
    let forward = json!([{"type": "forward", "target_groups": [{"arn": "tg", "weight": 1}]}]);
    let port = serving_plane(
        json!({
            "protocol": "HTTP", "default_actions": fixed("default"),
            "rules": [
                {"priority": 1, "actions": forward,
                 "conditions": [{"field": "path-pattern", "values": ["/api", "/api/*"]},
                                {"field": "host-header", "regex_values": ["^shop\\.example\\.com(:\\d+)?$"]}],
                 "transforms": [{"type": "url-rewrite", "rewrites": [{"regex": "(^/api(/)?)", "replace": "/v2$2"}]},
                                {"type": "host-header-rewrite", "rewrites": [{"regex": ".*", "replace": "backend.internal"}]}]},
                {"priority": 2, "actions": fixed("v2 rule"), "conditions": [{"field": "path-pattern", "values": ["/v2/*"]}]},
                {"priority": 3, "actions": forward, "conditions": [{"field": "path-pattern", "values": ["/broken"]}],
                 "transforms": [{"type": "url-rewrite", "rewrites": [{"regex": "^/broken$", "replace": "/x$2"}]}]},
                {"priority": 4, "conditions": [{"field": "path-pattern", "values": ["/moved"]}],
                 "transforms": [{"type": "url-rewrite", "rewrites": [{"regex": ".*", "replace": "/elsewhere"}]}],
                 "actions": [{"type": "redirect", "config": {"RedirectConfig": {
                     "Path": "/new/#{path}", "StatusCode": "HTTP_302"}}}]},
            ],
        }),
        target_port,
        None,
    );
    let out = ask(port, "GET /api/items?id=7 HTTP/1.1\r\nHost: shop.example.com:8080\r\nConnection: close\r\n\r\n");
    assert!(out.starts_with("HTTP/1.1 200 OK\r\n") && out.ends_with("\r\n\r\nok"), "{out}");
    let head = seen.recv_timeout(Duration::from_secs(5)).unwrap();
    assert!(head.starts_with("GET /v2/items?id=7 HTTP/1.1\r\n"), "{head}");
    assert!(head.contains("\r\nhost: backend.internal\r\n"), "{head}");
    assert!(
        head.contains("x-forwarded-proto: http\r\n") && head.contains(&format!("x-forwarded-port: {port}\r\n")),
        "{head}"
    );
    // The same path for another host: the regex condition does not match, the default answers.
    let out = ask(port, "GET /api/items HTTP/1.1\r\nHost: other.example.com\r\nConnection: close\r\n\r\n");
    assert!(out.ends_with("\r\n\r\ndefault"), "{out}");
    let out = ask(port, "GET /broken HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
    assert!(out.starts_with("HTTP/1.1 500 ") && out.contains("$2 names a group the regex does not have"), "{out}");
    let out = ask(port, "GET /moved HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
    assert!(out.contains(&format!("location: http://h:{port}/new/moved\r\n")), "{out}");
    assert!(seen.try_recv().is_err(), "only the first request reached the target");
}
