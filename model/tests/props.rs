//! Property-based tests of the model's public API (proptest). Cases per property: proptest's
//! default (256) or `PROPTEST_CASES`; docs/testing.md has the long run.

mod props {
    pub mod annotations;
    pub mod endpoints_plan;
    pub mod other_parsers;
    pub mod slices;
    pub mod tags;
}
