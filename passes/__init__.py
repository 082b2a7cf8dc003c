"""Fusion passes: pattern engine, Match / NearMiss records, registry, and the scope, AMCT and AutoFuse families."""
