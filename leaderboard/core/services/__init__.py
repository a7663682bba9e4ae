"""Write operations. Views, API views, commands and tasks call these; nothing else writes."""
