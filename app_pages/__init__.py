"""The dashboard's pages (``app.py`` routes to them with ``st.navigation``)."""
