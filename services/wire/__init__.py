"""Generated from proto/mfscore/v1 by mfscore.services.generate_wire; do not edit."""
