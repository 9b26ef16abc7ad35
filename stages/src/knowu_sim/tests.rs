//! Unit tests of KnowU task generation, consent and scoring.
