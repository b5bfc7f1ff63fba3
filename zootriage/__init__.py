"""zootriage: model-zoo triage by the geometry of class manifolds.

The repository keeps ``core/``, ``app/`` and ``worker/`` at its top (the product's layout); this
package names them ``zootriage.core``, ``zootriage.app`` and ``zootriage.worker`` through symlinks,
so an installed distribution claims one import name only.
"""
