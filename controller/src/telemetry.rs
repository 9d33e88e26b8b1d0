//! Logging and OpenTelemetry traces: one `tracing` subscriber for both.
//!
//! Spans are made where the work is funnelled, never at call sites: one per reconcile
//! ([`crate::metrics::Metrics::reconcile_started`]), one per AWS call attempt loop
//! (`lbc_aws::call::CallRunner::run_with`), one per Kubernetes write ([`crate::kube_gate`]).
//! With `--otlp-endpoint` set they are batched and sent over OTLP/HTTP (protobuf); every JSON log
//! line emitted inside a span then carries that span's `trace_id` and `span_id`, so a trace in
//! Tempo leads to its log lines in Loki and back. Without it no exporter exists and nothing is
//! sent: the subscriber has no OpenTelemetry layer at all.

use crate::args::{Args, LogFormat};
use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry_sdk::trace::SdkTracerProvider;
use std::fmt;
use std::time::Duration;
use tracing::Subscriber;
use tracing_opentelemetry::OtelData;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::{Format, Json, JsonFields, Writer};
use tracing_subscriber::fmt::{FmtContext, FormatEvent};
use tracing_subscriber::layer::{Layer as _, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;

/// Instrumentation scope of our spans.
const SCOPE: &str = "aws-lb-controller";

/// `--otlp-endpoint`: empty, or an `http`/`https` URL with a host; returns the URL spans are
/// posted to (`<base>/v1/traces`).
pub fn parse_otlp_endpoint(s: &str) -> Result<String, String> {
    let s = s.trim();
    if s.is_empty() {
        return Ok(String::new());
    }
    let example = "expected the OTLP/HTTP base URL of a collector, e.g. http://tempo.monitoring:4318";
    let uri: http::Uri = s.parse().map_err(|e| format!("{s:?} is not a URL ({e}): {example}"))?;
    match uri.scheme_str() {
        Some("http" | "https") => {}
        Some(other) => {
            return Err(format!("{s:?} has scheme {other:?}, not http or https (OTLP/HTTP only, no gRPC): {example}"));
        }
        None => return Err(format!("{s:?} has no scheme: {example}")),
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err(format!("{s:?} has no host: {example}"));
    }
    if uri.query().is_some() {
        return Err(format!("{s:?} has a query string, which OTLP endpoints do not take: {example}"));
    }
    if uri.port_u16() == Some(4317) {
        return Err(format!(
            "{s:?} uses port 4317, OTLP/gRPC's port; this controller exports OTLP/HTTP, usually port 4318: {example}"
        ));
    }
    let path = uri.path().trim_end_matches('/');
    if path.ends_with("/v1/traces") {
        return Ok(s.to_string());
    }
    let base = s.trim_end_matches('/');
    Ok(format!("{base}/v1/traces"))
}

/// `--otlp-service-name`: non-empty, no surrounding spaces.
pub fn parse_service_name(s: &str) -> Result<String, String> {
    if s.is_empty() || s.trim() != s {
        return Err(format!(
            "{s:?} is not a service name: expected a non-empty name without spaces around it, e.g. aws-lb-controller"
        ));
    }
    Ok(s.to_string())
}

/// `--otlp-sampling-ratio`: a number from 0 to 1.
pub fn parse_sampling_ratio(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(r) if (0.0..=1.0).contains(&r) => Ok(r),
        _ => Err(format!(
            "{s:?} is not a sampling ratio: expected a number from 0 to 1, e.g. 0.1 to keep one trace in ten"
        )),
    }
}

/// Keeps the exporter alive; [`Telemetry::shutdown`] sends what is still batched.
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

impl Telemetry {
    /// Flushes and stops the exporter (at most a few seconds: a gone collector must not hold up
    /// the controller's exit).
    pub async fn shutdown(self) {
        let Some(provider) = self.provider else { return };
        let flush = tokio::task::spawn_blocking(move || provider.shutdown_with_timeout(Duration::from_secs(5)));
        match tokio::time::timeout(Duration::from_secs(6), flush).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(e))) => {
                tracing::warn!(error = %e, "OTLP exporter did not shut down cleanly; the last spans may be lost")
            }
            _ => tracing::warn!("OTLP exporter did not shut down within 6s; the last spans may be lost"),
        }
    }
}

/// Installs the process's subscriber: `--log-level` filter, `--log-format` lines and, with
/// `--otlp-endpoint`, the OpenTelemetry layer and trace IDs in JSON lines. Must run inside the
/// tokio runtime (the batch exporter is a task of it).
pub fn init(args: &Args) -> anyhow::Result<Telemetry> {
    let filter = EnvFilter::try_new(&args.log_level).unwrap_or_else(|_| EnvFilter::new("info"));
    let provider = (!args.otlp_endpoint.is_empty())
        .then(|| provider(&args.otlp_endpoint, &args.otlp_service_name, args.otlp_sampling_ratio))
        .transpose()?;
    // Only our spans are exported (kube-runtime's empty "reconciling object" span would be a
    // trace of its own per reconcile); events of any target become events of our spans.
    let ours = tracing_subscriber::filter::filter_fn(|m| {
        m.is_event() || m.target().starts_with("aws_lb_controller") || m.target().starts_with("lbc_")
    });
    let otel = provider.as_ref().map(|p| tracing_opentelemetry::layer().with_tracer(p.tracer(SCOPE)).with_filter(ours));
    let registry = tracing_subscriber::registry().with(filter).with(otel);
    match args.log_format {
        LogFormat::Json => registry
            .with(tracing_subscriber::fmt::layer().fmt_fields(JsonFields::new()).event_format(TraceIds::default()))
            .init(),
        LogFormat::Text => registry.with(tracing_subscriber::fmt::layer()).init(),
    }
    if provider.is_some() {
        tracing::info!(
            endpoint = %args.otlp_endpoint,
            service_name = %args.otlp_service_name,
            sampling_ratio = args.otlp_sampling_ratio,
            "exporting traces over OTLP/HTTP"
        );
    }
    Ok(Telemetry { provider })
}

fn provider(endpoint: &str, service_name: &str, ratio: f64) -> anyhow::Result<SdkTracerProvider> {
    use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
    use opentelemetry_sdk::trace::{
        BatchConfigBuilder, Sampler, span_processor_with_async_runtime::BatchSpanProcessor,
    };
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| anyhow::anyhow!("--otlp-endpoint={endpoint}: cannot build the HTTP client: {e}"))?;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(client)
        .with_endpoint(endpoint)
        .with_timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| anyhow::anyhow!("--otlp-endpoint={endpoint}: cannot build the OTLP exporter: {e}"))?;
    let batch = BatchConfigBuilder::default().with_scheduled_delay(Duration::from_secs(2)).build();
    let processor =
        BatchSpanProcessor::builder(exporter, opentelemetry_sdk::runtime::Tokio).with_batch_config(batch).build();
    let resource = opentelemetry_sdk::Resource::builder().with_service_name(service_name.to_string()).build();
    Ok(SdkTracerProvider::builder()
        .with_span_processor(processor)
        .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(ratio))))
        .with_resource(resource)
        .build())
}

/// The trace ID of `span` when it is recorded and sampled (for exemplars): `None` without
/// `--otlp-endpoint`, for an unsampled trace, or outside any span.
pub fn sampled_trace_id(span: &tracing::Span) -> Option<String> {
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    if span.is_disabled() {
        return None;
    }
    let cx = span.context();
    let sc = cx.span().span_context().clone();
    (sc.is_valid() && sc.is_sampled()).then(|| sc.trace_id().to_string())
}

/// tracing-subscriber's JSON lines with `trace_id` and `span_id` of the innermost span that has
/// an OpenTelemetry context (every span, when the OpenTelemetry layer is installed), first in the
/// object, so a line reads `{"trace_id":"…","span_id":"…","timestamp":…}`.
pub struct TraceIds {
    inner: Format<Json>,
}

impl Default for TraceIds {
    fn default() -> Self {
        Self { inner: Format::default().json() }
    }
}

impl<S, N> FormatEvent<S, N> for TraceIds
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> fmt::Result {
        let ids = ctx.lookup_current().and_then(|span| {
            span.scope().find_map(|s| {
                let ext = s.extensions();
                let data = ext.get::<OtelData>()?;
                Some((data.trace_id()?, data.span_id()?))
            })
        });
        let Some((trace_id, span_id)) = ids.filter(|(t, _)| *t != opentelemetry::TraceId::INVALID) else {
            return self.inner.format_event(ctx, writer, event);
        };
        let mut line = String::new();
        self.inner.format_event(ctx, Writer::new(&mut line), event)?;
        match line.strip_prefix('{') {
            Some(rest) => write!(writer, "{{\"trace_id\":\"{trace_id}\",\"span_id\":\"{span_id}\",{rest}"),
            None => writer.write_str(&line),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn endpoints_are_checked_and_completed_with_the_traces_path() {
        assert_eq!(parse_otlp_endpoint("").unwrap(), "");
        assert_eq!(
            parse_otlp_endpoint("http://tempo.monitoring:4318").unwrap(),
            "http://tempo.monitoring:4318/v1/traces"
        );
        assert_eq!(parse_otlp_endpoint("https://otel.example.com/").unwrap(), "https://otel.example.com/v1/traces");
        assert_eq!(parse_otlp_endpoint("http://c:4318/otlp/v1/traces").unwrap(), "http://c:4318/otlp/v1/traces");
        assert_eq!(parse_otlp_endpoint("http://c:4318/otlp").unwrap(), "http://c:4318/otlp/v1/traces");
        for (bad, says) in [
            ("tempo:4318", "no scheme"),
            ("grpc://tempo:4317", "not http or https"),
            ("http://tempo:4317", "OTLP/gRPC's port"),
            ("http://tempo:4318/?x=1", "query string"),
            ("not a url", "is not a URL"),
            ("/v1/traces", "no scheme"),
        ] {
            let e = parse_otlp_endpoint(bad).unwrap_err();
            assert!(e.contains(says) && e.contains("http://tempo.monitoring:4318"), "{bad}: {e}");
        }
    }

    #[test]
    fn service_name_and_ratio_are_checked() {
        assert_eq!(parse_service_name("lbc-prod").unwrap(), "lbc-prod");
        assert!(parse_service_name("").is_err() && parse_service_name(" x").is_err());
        assert_eq!(parse_sampling_ratio("0.25").unwrap(), 0.25);
        assert_eq!(parse_sampling_ratio("0").unwrap(), 0.0);
        assert_eq!(parse_sampling_ratio("1").unwrap(), 1.0);
        for bad in ["1.5", "-0.1", "NaN", "half", ""] {
            assert!(parse_sampling_ratio(bad).unwrap_err().contains("from 0 to 1"), "{bad}");
        }
    }

    /// Collects what the subscriber writes.
    #[derive(Clone, Default)]
    struct Buf(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn lines(buf: &Buf) -> Vec<serde_json::Value> {
        let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?} is not JSON: {e}"))).collect()
    }

    #[test]
    fn json_lines_inside_a_span_carry_its_trace_and_span_ids() {
        // A provider with no processor: spans get IDs, nothing is exported.
        let provider = SdkTracerProvider::builder().build();
        let buf = Buf::default();
        let w = buf.clone();
        let subscriber = tracing_subscriber::registry()
            .with(tracing_opentelemetry::layer().with_tracer(provider.tracer(SCOPE)))
            .with(
                tracing_subscriber::fmt::layer()
                    .fmt_fields(JsonFields::new())
                    .event_format(TraceIds::default())
                    .with_writer(move || w.clone()),
            );
        let (outer_id, inner_trace, exemplar) = tracing::subscriber::with_default(subscriber, || {
            tracing::info!("outside");
            let outer = tracing::info_span!("reconcile", object = "ns/b");
            let _o = outer.enter();
            tracing::info!(n = 1, "in reconcile");
            let inner = tracing::info_span!("aws.call");
            let _i = inner.enter();
            tracing::warn!("in call");
            let ex = sampled_trace_id(&tracing::Span::current());
            (outer.id(), ex.clone(), ex)
        });
        assert!(outer_id.is_some());
        let l = lines(&buf);
        assert_eq!(l.len(), 3, "{l:?}");
        assert!(l[0].get("trace_id").is_none(), "no span, no trace_id: {}", l[0]);
        assert_eq!(l[0]["fields"]["message"], "outside");
        let (t1, t2) = (l[1]["trace_id"].as_str().unwrap(), l[2]["trace_id"].as_str().unwrap());
        assert_eq!(t1.len(), 32, "{t1}");
        assert_eq!(t1, t2, "child span is in its parent's trace");
        assert_ne!(l[1]["span_id"], l[2]["span_id"], "each line names its own span");
        assert_eq!(l[1]["span_id"].as_str().unwrap().len(), 16);
        assert_eq!(l[1]["fields"]["n"], 1, "the usual JSON fields are kept: {}", l[1]);
        assert_eq!(l[1]["span"]["object"], "ns/b");
        assert_eq!(inner_trace.as_deref(), Some(t1), "exemplar trace ID = log trace ID");
        assert!(exemplar.is_some());
    }

    #[test]
    fn without_the_opentelemetry_layer_lines_are_plain_json_and_there_is_no_exemplar() {
        let buf = Buf::default();
        let w = buf.clone();
        let subscriber = tracing_subscriber::registry().with(
            tracing_subscriber::fmt::layer()
                .fmt_fields(JsonFields::new())
                .event_format(TraceIds::default())
                .with_writer(move || w.clone()),
        );
        let ex = tracing::subscriber::with_default(subscriber, || {
            let s = tracing::info_span!("reconcile");
            let _g = s.enter();
            tracing::info!("inside");
            sampled_trace_id(&tracing::Span::current())
        });
        let l = lines(&buf);
        assert!(l[0].get("trace_id").is_none() && l[0].get("span_id").is_none(), "{}", l[0]);
        assert_eq!(ex, None);
    }
}
