-- Token roles of issue 11: `tenant-admin` (every project of one tenant) beside `user` and `admin`
-- (one project); and `account`, the account a user token acts as (its LLM usage is all it sees).
ALTER TABLE tokens DROP CONSTRAINT IF EXISTS tokens_role_check;
ALTER TABLE tokens ADD CONSTRAINT tokens_role_check CHECK (role IN ('user', 'admin', 'tenant-admin'));
ALTER TABLE tokens ADD COLUMN account TEXT;
