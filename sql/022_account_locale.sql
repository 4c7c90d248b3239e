-- Mail in the account's language (issue 36): the locale the account chose, or its registration
-- asked for; NULL: MAIL_DEFAULT_LOCALE, then English. Bounded as the API validates it (src/locales.ts).
ALTER TABLE accounts ADD COLUMN locale text CHECK (length(locale) <= 16);
COMMENT ON COLUMN accounts.locale IS 'BCP 47 tag (canonical case) that mail to the account is written in; NULL: MAIL_DEFAULT_LOCALE, then English.';
ALTER TABLE registration_requests ADD COLUMN locale text CHECK (length(locale) <= 16);
COMMENT ON COLUMN registration_requests.locale IS 'The locale the request named or its Accept-Language matched; the registration keeps it.';
