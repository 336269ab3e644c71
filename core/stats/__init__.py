"""Pure statistics: arrays and frames in, frozen result objects out.

Nothing here takes a store, reads global state or prints.  An estimate that
the data cannot support comes back with a ``reason``; invalid input raises.
"""
