"""The entry points: the command line (``cli``), the JSON API (``http``) and the browser pages
(``web``). Each calls application services only, and none imports another."""
