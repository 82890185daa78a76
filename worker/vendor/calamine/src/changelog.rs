// SPDX-License-Identifier: MIT
//
// Copyright 2016-2026, Johann Tuffe.

//! Changelog for `calamine`.

#![doc = include_str!("../Changelog.md")]
