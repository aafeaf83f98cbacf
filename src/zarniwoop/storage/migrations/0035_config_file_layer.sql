-- A config file is now a layer in force only for the runs that name it (DESIGN §2), not rows in the
-- settings table. The keys a file wrote at its starts (recorded in config_seeded) move out of the
-- stored settings, each removal in the settings history; a run with the same file sees them again.
INSERT INTO settings_changes (at, token_id, tenant, project, keys, note)
SELECT {utc_now_text} || '+00:00', 'config file', s.tenant, s.project, s.key,
       'moved out: ' || c.source || ' is in force only while given'
FROM settings s
JOIN config_seeded c ON c.tenant = s.tenant AND c.project = s.project AND c.key = s.key;

DELETE FROM settings
WHERE EXISTS (
    SELECT 1 FROM config_seeded c
    WHERE c.tenant = settings.tenant AND c.project = settings.project AND c.key = settings.key
);

DROP TABLE config_seeded;

-- The same for the `tenants:` tree: the org units a file declared (origin 'config') and the inline
-- API keys sealed for them (a unit an admin stored has origin 'admin' and keeps its keys).
DELETE FROM credentials
WHERE origin = 'config' AND EXISTS (
    SELECT 1 FROM org_units u
    WHERE u.origin = 'config' AND u.tenant = credentials.tenant AND u.kind = credentials.level
      AND u.name = credentials.owner
);

DELETE FROM org_units WHERE origin = 'config';
