// The console's pages beyond the built-in ones (app.js): one module each, registering itself with
// core.js's `registerPage(name, { results, load })`; its section (`#page-<name>`, with
// `<name>-title`, `<name>-status`, `<name>-error` and its results box) is in index.html, and its nav
// link too. Import each one here.
import "./usage.js";
import "./credentials.js";
import "./models.js";
import "./grants.js";
