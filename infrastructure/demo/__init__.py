"""The demo: the club data it seeds (``seed``), local passwords for its people
(``passwords``) and ``countersign demo``, the guided story (``story``)."""
